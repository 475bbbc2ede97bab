"""The secret key a process seals and opens ciphertexts with, checked against what is stored before
anything runs (R-1.5, R-7.3, R-10.1, fix37).

A data directory keeps its ciphertexts beside its key file (`<data dir>/secret.key`);
`MCP_CENTER_SECRET_KEY` overrides that file. Two mistakes used to pass silently until the first
secret was opened: an env key that is not the key the stored secrets were sealed with, and an env
key that differs from an existing key file (which one is meant?). `checked_key` refuses both with
SECRET_KEY_MISMATCH, naming where each key came from (env / file), never a key value.

With a database (`--database-url`) the database records its key's check (`Store.check_key`) and is
the judge; the data directory's own `secret.key` seals nothing there, so an env key that differs
from it is not refused (an instance's directory may keep the file of a run before the migration).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcp_center.errors import SecretKeyMismatch, SecretStoreError
from mcp_center.secrets import SecretCipher, decode_key, key_check, load_or_create_key
from mcp_center.secrets.keyfiles import KEY_FILE

if TYPE_CHECKING:
    from mcp_center.config import Settings
    from mcp_center.store import Store

__all__ = ["ENV_SOURCE", "checked_key"]

ENV_SOURCE = "MCP_CENTER_SECRET_KEY (env)"
"""How a message names the environment's key."""

_OAUTH_PREFIX = "mcp.oauth."  # sealed with the binding as associated data, not the id (auth/vault.py)


def _file_source(settings: Settings) -> str:
    return f"{settings.data_dir / KEY_FILE} (file)"


def _opens_stored(cipher: SecretCipher, secrets: dict[str, str]) -> bool | None:
    """Whether `cipher` opens the stored secrets (one is enough); None when none can be tried."""
    tried = False
    for internal, token in secrets.items():
        if internal.startswith(_OAUTH_PREFIX):
            continue
        tried = True
        try:
            cipher.open(token, associated_data=internal)
        except SecretStoreError:
            continue
        return True
    return False if tried else None


def checked_key(settings: Settings, store: Store) -> bytes:
    """The 32-byte master key of `settings` (`MCP_CENTER_SECRET_KEY`, else `<data dir>/secret.key`,
    created once), after checking it is the key of the open `store` (R-1.5, R-10.1).

    Files (no `database_url`): an env key that differs from an existing key file is refused, and so
    is a key that opens none of the stored secrets (when there are some to try; OAuth tokens are
    not tried), and a missing key file when secrets are stored (a new key would open none; none is
    created). Database: the database's recorded check (`Store.check_key`; the first instance
    records it).

    Raises:
        SecretKeyMismatch: (exit 1) as above; the message names the key's source (`MCP_CENTER_SECRET_KEY
            (env)` or the key file's path `(file)`) and, for two differing keys, which one opens the
            stored secrets; `details`: `data_dir`, `key_source` (`env` / `file`), never a key value.
            Nothing was written.
        SecretStoreError: a key is malformed or its file is readable by others.
    """
    env_key = settings.secret_key
    path = settings.data_dir / KEY_FILE
    stored = {} if settings.database_url else store.read().secrets
    details = {"data_dir": str(settings.data_dir), "key_source": "env" if env_key else "file"}
    if not env_key and not path.exists() and any(not internal.startswith(_OAUTH_PREFIX) for internal in stored):
        raise SecretKeyMismatch(  # a new key would open none of them: none is made
            f"{_file_source(settings)} is missing, and the secrets stored in {settings.data_dir} were sealed with "
            "a key; put the file back, or set MCP_CENTER_SECRET_KEY to the key",
            details=details,
        )
    made_now = not env_key and not path.exists()  # a key made for this start: gone again if refused
    key = load_or_create_key(settings.data_dir, env_key)
    cipher = SecretCipher(key)
    if not settings.database_url:
        if env_key and path.exists():
            file_key = load_or_create_key(settings.data_dir, None)
            if file_key != decode_key(env_key):
                raise SecretKeyMismatch(
                    f"{ENV_SOURCE} differs from {_file_source(settings)}; "
                    f"{_which_opens(cipher, SecretCipher(file_key), stored)}",
                    details=details,
                )
        if _opens_stored(cipher, stored) is False:
            source = ENV_SOURCE if env_key else _file_source(settings)
            raise SecretKeyMismatch(
                f"the secret key from {source} does not open the secrets stored in {settings.data_dir}; "
                "start with the key they were sealed with (MCP_CENTER_SECRET_KEY, or the data directory's "
                f"{KEY_FILE})",
                details=details,
            )
    try:
        store.check_key(key_check(cipher))
    except SecretKeyMismatch:
        if made_now:  # a database's secrets belong to another key: the new file would only mislead
            path.unlink(missing_ok=True)
        raise
    return key


def _which_opens(env: SecretCipher, file: SecretCipher, stored: dict[str, str]) -> str:
    """The next step for two differing keys: keep the one that opens the stored secrets."""
    if _opens_stored(env, stored):
        return f"the stored secrets open with the env key: remove {KEY_FILE} (keep a copy) to use it"
    if _opens_stored(file, stored):
        return f"the stored secrets open with {KEY_FILE}: unset MCP_CENTER_SECRET_KEY to use it"
    return f"keep one: unset MCP_CENTER_SECRET_KEY to use {KEY_FILE}, or remove {KEY_FILE} (keep a copy)"
