"""Private files in the data directory: the secret key and the admin token (R-1.5, R-7.1).

Threat: key material readable by other local users, or silently regenerated (which would make
every stored ciphertext unreadable), or read half-written by a second process starting at the same
moment. A file is written complete to a temp file (`mkstemp`: `O_CREAT | O_EXCL`, mode 0600, so
there is no window where it is world-readable), then published with `link()`, which fails if the
name exists: a racing process either wins or reads the winner's complete file, never an empty
one. An existing file that is readable by group or others is refused rather than used.
"""

from __future__ import annotations

import base64
import contextlib
import os
import secrets as _random
import stat
import tempfile
from pathlib import Path

from mcp_center.errors import SecretStoreError

__all__ = ["decode_key", "load_or_create_admin_token", "load_or_create_key", "read_admin_token"]

KEY_FILE = "secret.key"
ADMIN_TOKEN_FILE = "admin-token"  # noqa: S105 - a file name, not a credential


def _read_private(path: Path) -> str:
    info = path.stat()
    if not stat.S_ISREG(info.st_mode):
        raise SecretStoreError(f"{path} is not a file; move it away and retry", details={"file": path.name})
    if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise SecretStoreError(
            f"{path.name} in the data directory is readable by other users; run 'chmod 600 {path}' and retry",
            details={"file": path.name},
        )
    try:
        return path.read_text(encoding="ascii").strip()
    except UnicodeDecodeError:
        raise SecretStoreError(
            f"{path.name} in the data directory is not ASCII text", details={"file": path.name}
        ) from None


def _create_private(path: Path, content: str) -> bool:
    """Create `path` with mode 0600 holding `content`; False if another process created it first.

    The name appears only once the content is complete (temp file + `link`), so a process that
    loses the race reads the winner's full file, never an empty or partial one.
    """
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="ascii") as handle:
            handle.write(content + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.link(tmp_name, path)
        except FileExistsError:
            return False
        except OSError:
            # No hard links on this file system (some FUSE/SMB mounts): fall back to O_EXCL,
            # which still creates the file once, with a short window where it is empty.
            if not _create_exclusive(path, content):
                return False
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
    return True


def _create_exclusive(path: Path, content: str) -> bool:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w", encoding="ascii") as handle:
        handle.write(content + "\n")
        handle.flush()
        os.fsync(handle.fileno())
    return True


ENV_KEY = "MCP_CENTER_SECRET_KEY"


def decode_key(encoded: str, source: str = ENV_KEY) -> bytes:
    """Decode a urlsafe-base64 32-byte key (as in `MCP_CENTER_SECRET_KEY`).

    Args:
        source: Where the key came from, for the message: the variable's name or the key file's path.
    Raises:
        SecretStoreError: empty, not base64 or not 32 bytes (`details.key_source`: `env` or `file`;
            never the key).
    """
    text = encoded.strip().rstrip("=")
    details = {"key_source": "env" if source == ENV_KEY else "file"}
    if not text:
        raise SecretStoreError(f"the secret key in {source} is empty", details=details)
    try:
        # validate=True: a stray character is an error, not silently skipped (which would yield another key).
        raw = base64.b64decode(text + "=" * (-len(text) % 4), altchars=b"-_", validate=True)
    except ValueError:
        raise SecretStoreError(f"the secret key in {source} is not urlsafe base64", details=details) from None
    if len(raw) != 32:
        raise SecretStoreError(
            f"the secret key in {source} must be 32 bytes (44 characters of urlsafe base64)", details=details
        )
    return raw


def load_or_create_key(data_dir: Path, env_key: str | None) -> bytes:
    """Return the 32-byte master key: from `env_key` if given, else `<data dir>/secret.key` (created once).

    Raises:
        SecretStoreError: the key is malformed or its file is readable by others.
    """
    if env_key:
        return decode_key(env_key)
    path = data_dir / KEY_FILE
    if not path.exists():
        _create_private(path, base64.urlsafe_b64encode(_random.token_bytes(32)).decode("ascii"))
    return decode_key(_read_private(path), str(path))


def load_or_create_admin_token(data_dir: Path, env_token: str | None) -> tuple[str, bool]:
    """Return `(token, created_now)`: `env_token` if given, else `<data dir>/admin-token` (created once, 0600).

    `created_now` is True only for the process that created the file, so `serve` prints the token
    exactly once (R-7.1).

    Raises:
        SecretStoreError: the token file is readable by others or empty.
    """
    if env_token:
        if len(env_token) < 16:
            raise SecretStoreError("MCP_CENTER_ADMIN_TOKEN must be at least 16 characters")
        return env_token, False
    path = data_dir / ADMIN_TOKEN_FILE
    created = False
    if not path.exists():
        created = _create_private(path, "mcpc_" + _random.token_urlsafe(32))
    token = _read_private(path)
    if not token:
        raise SecretStoreError(f"{path.name} is empty; delete it to generate a new admin token")
    return token, created


def read_admin_token(data_dir: Path, env_token: str | None) -> str | None:
    """The admin token a running host uses (`env_token`, else `<data dir>/admin-token`), never creating one.

    For CLI verbs that talk to a running `serve` (approvals live in its memory). None when there is none.

    Raises:
        SecretStoreError: the token file is readable by others.
    """
    if env_token:
        return env_token
    path = data_dir / ADMIN_TOKEN_FILE
    if not path.exists():
        return None
    return _read_private(path) or None
