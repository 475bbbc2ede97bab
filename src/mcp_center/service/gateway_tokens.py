"""Gateway tokens: what agents and MCP clients present at `/mcp` (R-7.1: "the gateway has its own tokens").

Threat: the credential an MCP client keeps in its config file (Claude Code, Cursor) being the
admin token, which can also reconfigure the host. A gateway token can only list and call what
the user enabled, through the approval policy; it cannot change anything. Tokens are shown once
when created and stored only as SHA-256 hashes (`<data>/mcp/gateway-tokens.json`, 0600, written
atomically under a lock), so a stolen file does not yield a usable token. `MCP_CENTER_SERVE_GATEWAY_TOKEN`
adds one more valid token for automation (never stored).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets as _random
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mcp_center.errors import FieldError, NotFound, RequestInvalid, StorageError
from mcp_center.store import FileLock, atomic_write

__all__ = ["ENV_TOKEN_ID", "GatewayTokenNotFound", "GatewayTokens", "TokenRecord"]

TOKENS_FILE = "gateway-tokens.json"
TOKEN_PREFIX = "mcpg_"  # noqa: S105 - a prefix, not a credential
MAX_TOKENS = 100
MAX_NAME_CHARS = 64
ENV_TOKEN_ID = "env"  # noqa: S105 - an id, not a credential
"""The id `identify` gives `MCP_CENTER_SERVE_GATEWAY_TOKEN` (stored ids are 12 hex digits)."""


class GatewayTokenNotFound(NotFound):
    """No gateway token with that id."""

    code = "GATEWAY_TOKEN_NOT_FOUND"


@dataclass(frozen=True)
class TokenRecord:
    """A gateway token as stored: never the token itself."""

    id: str
    name: str
    sha256: str
    created_at: str

    def view(self) -> dict[str, Any]:
        """JSON shape for the API (no hash, no token)."""
        return {"id": self.id, "name": self.name, "created_at": self.created_at}


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class GatewayTokens:
    """Create, list, revoke and verify gateway tokens.

    Args:
        directory: `<data dir>/mcp`.
        env_token: `MCP_CENTER_SERVE_GATEWAY_TOKEN`, accepted in addition to stored tokens, or None.
    """

    def __init__(self, directory: Path, env_token: str | None = None) -> None:
        self._path = directory / TOKENS_FILE
        self._lock = FileLock(directory / ".gateway-tokens.lock")
        self._env_hash = _hash(env_token) if env_token else None
        self._cache: tuple[tuple[int, int] | None, list[TokenRecord]] = (None, [])

    def _stamp(self) -> tuple[int, int] | None:
        try:
            info = self._path.stat()
        except FileNotFoundError:
            return None
        return (info.st_mtime_ns, info.st_size)

    def _load(self) -> list[TokenRecord]:
        try:
            doc = json.loads(self._path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return []
        except (OSError, ValueError) as exc:
            raise StorageError(f"{TOKENS_FILE} cannot be read ({exc}); fix or remove it") from None
        return [TokenRecord(**item) for item in doc.get("tokens", [])]

    def _save(self, records: list[TokenRecord]) -> None:
        doc = {"schema_version": 1, "tokens": [r.__dict__ for r in records]}
        atomic_write(self._path, (json.dumps(doc, indent=2) + "\n").encode("utf-8"))

    def list(self) -> list[TokenRecord]:
        """Stored tokens, oldest first."""
        with self._lock.hold(shared=True):
            return self._load()

    def create(self, name: object) -> tuple[TokenRecord, str]:
        """Create a token; returns `(record, token)`. The token is shown once and never again.

        Raises:
            RequestInvalid: the name is empty, too long, or there are already `MAX_TOKENS` tokens.
        """
        clean = name.strip() if isinstance(name, str) else ""
        if not clean or len(clean) > MAX_NAME_CHARS or not clean.isprintable():
            code, why = (
                ("FIELD_REQUIRED", "is required")
                if not clean
                else ("FIELD_INVALID", f"must be at most {MAX_NAME_CHARS} printable characters")
            )
            raise RequestInvalid(
                f"name: must be 1-{MAX_NAME_CHARS} printable characters",
                details={"errors": [FieldError("name", code, why).to_dict()]},
            )
        token = TOKEN_PREFIX + _random.token_urlsafe(32)
        record = TokenRecord(
            id=uuid.uuid4().hex[:12], name=clean, sha256=_hash(token), created_at=datetime.now(UTC).isoformat()
        )
        with self._lock.hold():
            records = self._load()
            if len(records) >= MAX_TOKENS:
                raise RequestInvalid(f"at most {MAX_TOKENS} gateway tokens; revoke one first")
            self._save([*records, record])
            self._cache = (None, [])  # never trust the stamp for our own write (coarse mtime)
        return record, token

    def revoke(self, token_id: str) -> None:
        """Delete a token; clients using it are refused from the next request on, and the gateway
        ends the sessions it opened (`GatewayEndpoint`).

        Raises:
            GatewayTokenNotFound.
        """
        with self._lock.hold():
            records = self._load()
            kept = [r for r in records if r.id != token_id]
            if len(kept) == len(records):
                raise GatewayTokenNotFound(f"no gateway token with id '{token_id}'", details={"id": token_id})
            self._save(kept)
            self._cache = (None, [])

    def verify(self, presented: str | None) -> bool:
        """True when `presented` is a current gateway token (constant-time comparison of hashes)."""
        return self.identify(presented) is not None

    def identify(self, presented: str | None) -> str | None:
        """The id of the current gateway token `presented` is (`ENV_TOKEN_ID` for the env token), else None."""
        if not presented:
            return None
        digest = _hash(presented)
        if self._env_hash is not None and hmac.compare_digest(digest, self._env_hash):
            return ENV_TOKEN_ID
        found = None
        for record in self._current():
            if hmac.compare_digest(digest, record.sha256):
                found = record.id
        return found

    def is_current(self, token_id: str) -> bool:
        """True while the token with this id (from `identify`) has not been revoked."""
        if token_id == ENV_TOKEN_ID:
            return self._env_hash is not None
        return any(record.id == token_id for record in self._current())

    def name_of(self, token_id: str) -> str | None:
        """The name of the token with this id (None when unknown or revoked); the serve-time token
        from `MCP_CENTER_SERVE_GATEWAY_TOKEN` is named after its variable. Cheap: the file is re-read
        only when it changed (the approval card of every gateway call asks, R-5.3)."""
        if token_id == ENV_TOKEN_ID:
            return "MCP_CENTER_SERVE_GATEWAY_TOKEN" if self._env_hash is not None else None
        return next((record.name for record in self._current() if record.id == token_id), None)

    def _current(self) -> list[TokenRecord]:
        stamp = self._stamp()
        if stamp != self._cache[0]:
            with self._lock.hold(shared=True):
                self._cache = (stamp, self._load())
        return self._cache[1]
