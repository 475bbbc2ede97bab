"""Gateway tokens: what agents and MCP clients present at `/mcp` (R-7.1: "the gateway has its own tokens").

Threat: the credential an MCP client keeps in its config file (Claude Code, Cursor) being the
admin token, which can also reconfigure the host. A gateway token can only list and call what
the user enabled, through the approval policy; it cannot change anything. Tokens are shown once
when created and stored only as SHA-256 hashes (the store's `gateway_tokens` section,
`<data>/mcp/gateway-tokens.json`, committed like every other change, R-9.1), so a stolen file does
not yield a usable token. `MCP_CENTER_SERVE_GATEWAY_TOKEN` adds one more valid token for
automation (never stored).

Every gateway request checks its token: `identify` answers from a cache that is refreshed only
when the section's stamp changed (`Store.stamp`, two `stat` calls), so a token revoked by another
process (the CLI) is refused from its next request on. The SHA-256 of a token that was found
current is remembered (`DIGESTS_REMEMBERED`, keyed by the exact token presented), so a client's
next requests skip hashing it again; which tokens are current is still read per request, so a
revocation counts exactly as soon as before. The gateway asks `identify_cached`: when the cache is
stale (the section changed) it answers `STALE` instead of reading the store on the event loop, and
the gateway `refresh()`es in a store read thread before asking again (a cache hit gains no thread hop).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets as _random
import uuid
from collections.abc import Hashable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Final, Literal

from mcp_center.errors import FieldError, GatewayTokenAmbiguous, GatewayTokenNotFound, RequestInvalid, did_you_mean
from mcp_center.service.store_threads import in_read_thread, in_write_thread
from mcp_center.store import GatewayTokenRecord, JsonStore, Store

__all__ = ["ENV_TOKEN_ID", "STALE", "GatewayTokenNotFound", "GatewayTokens", "Revoked", "TokenRecord"]

TOKEN_PREFIX = "mcpg_"  # noqa: S105 - a prefix, not a credential
MAX_TOKENS = 100
STALE: Final = "stale"
"""`identify_cached`'s answer when the tokens must be read from the store first (`refresh`)."""
MAX_NAME_CHARS = 64
MAX_REVOKED_KEPT = 100
"""Revoked tokens whose record is kept (so that revoking one again says so); the oldest go first."""
ENV_TOKEN_ID = "env"  # noqa: S105 - an id, not a credential
"""The id `identify` gives `MCP_CENTER_SERVE_GATEWAY_TOKEN` (stored ids are 12 hex digits)."""

DIGESTS_REMEMBERED = 64
"""Tokens whose digest the verifier keeps (those found current only; a wrong guess is never kept, so
guessing cannot fill it); when full, it starts over. A digest is a pure function of its token, so a
kept one never needs invalidating: a revoked token's digest simply no longer matches a record."""

TokenRecord = GatewayTokenRecord
"""A gateway token as stored: never the token itself (`view()` is its API shape)."""


@dataclass(frozen=True, slots=True)
class Revoked:
    """What `GatewayTokens.revoke` did: `record` (its `revoked_at` set), and `already` True when it
    had been revoked before (nothing changed then)."""

    record: TokenRecord
    already: bool


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class GatewayTokens:
    """Create, list, revoke and verify gateway tokens. Methods are synchronous (store I/O).

    Args:
        store: The host's store, or the `<data dir>/mcp` directory of one (the CLI).
        env_token: `MCP_CENTER_SERVE_GATEWAY_TOKEN`, accepted in addition to stored tokens, or None.
    """

    def __init__(self, store: Store | Path, env_token: str | None = None) -> None:
        self._store: Store = JsonStore(store) if isinstance(store, Path) else store
        self._env_hash = _hash(env_token) if env_token else None
        self._cache: tuple[Hashable, list[TokenRecord]] | None = None
        self._digests: dict[str, str] = {}
        """Presented token → its SHA-256, for tokens found current (`DIGESTS_REMEMBERED`)."""

    def list(self, *, revoked: bool = False) -> list[TokenRecord]:
        """Live tokens, oldest first; with `revoked`, the revoked ones still kept too.

        Raises:
            StorageError: the store cannot be read.
        """
        records = self._store.read().gateway_tokens.values()
        return sorted((r for r in records if revoked or r.revoked_at is None), key=lambda r: r.created_at)

    def find(self, id_or_name: str) -> TokenRecord:
        """The token `id_or_name` names: the one with that id (live or revoked), else the one live
        token with that name, else, none live, the revoked token with that name revoked last
        (issue 16: `gateway token revoke claude-code`; once every `dup` is revoked, `revoke dup`
        says "already revoked", not ambiguous: nothing is left to tell apart).

        Raises:
            GatewayTokenAmbiguous: several live tokens carry that name; `details.ids` lists them (exit 2).
            GatewayTokenNotFound: no token has that id or name; `details.did_you_mean` (exit 3).
            StorageError: the store cannot be read.
        """
        records = self.list(revoked=True)
        by_id = next((r for r in records if r.id == id_or_name), None)
        if by_id is not None:
            return by_id
        named = [r for r in records if r.name == id_or_name]
        live = [r for r in named if r.revoked_at is None]
        if len(live) == 1:
            return live[0]
        if live:
            ids = [r.id for r in live]
            raise GatewayTokenAmbiguous(
                f"{len(ids)} gateway tokens are named '{id_or_name}' ({', '.join(ids)}): name one by its id",
                details={"name": id_or_name, "ids": ids},
            )
        if named:
            return max(named, key=lambda r: r.revoked_at or "")
        close = did_you_mean(id_or_name, [r.name for r in records if r.revoked_at is None])
        raise GatewayTokenNotFound(
            f"no gateway token with id or name '{id_or_name}'", details={"id": id_or_name, "did_you_mean": close}
        )

    def create(self, name: object) -> tuple[TokenRecord, str]:
        """Create a token; returns `(record, token)`. The token is shown once and never again.

        Raises:
            RequestInvalid: the name is empty, too long, or another token's id (`NAME_IS_TOKEN_ID`:
                `revoke <that id>` would revoke the other one; issue 16), or there are already
                `MAX_TOKENS` tokens.
            StorageError: the commit failed (no token was created).
        """
        clean = name.strip() if isinstance(name, str) else ""
        if not clean or len(clean) > MAX_NAME_CHARS or not clean.isprintable():
            if not clean:
                code, why = "FIELD_REQUIRED", "is required"
            elif not clean.isprintable():
                code, why = "FIELD_INVALID", "must hold printable characters only (no control characters)"
            else:
                code, why = "FIELD_INVALID", f"must be at most {MAX_NAME_CHARS} characters (got {len(clean)})"
            raise RequestInvalid(f"name: {why}", details={"errors": [FieldError("name", code, why).to_dict()]})
        token = TOKEN_PREFIX + _random.token_urlsafe(32)
        record = TokenRecord(
            id=uuid.uuid4().hex[:12], name=clean, sha256=_hash(token), created_at=datetime.now(UTC).isoformat()
        )
        with self._store.transaction() as state:
            if clean in state.gateway_tokens:
                why = "is another gateway token's id (ids name tokens first): choose another name"
                raise RequestInvalid(
                    f"name: {why}", details={"errors": [FieldError("name", "NAME_IS_TOKEN_ID", why).to_dict()]}
                )
            if sum(r.revoked_at is None for r in state.gateway_tokens.values()) >= MAX_TOKENS:
                raise RequestInvalid(f"at most {MAX_TOKENS} gateway tokens; revoke one first")
            state.gateway_tokens[record.id] = record
        self._cache = None
        return record, token

    def revoke(self, token_id: str) -> Revoked:
        """Revoke a token by id: clients using it are refused from the next request on, and the
        gateway ends the sessions it opened (`GatewayEndpoint`). Its record stays without its hash
        (`TokenRecord.revoked_at`; at most `MAX_REVOKED_KEPT` revoked ones), so a second revoke
        answers `already=True` and changes nothing.

        Raises:
            GatewayTokenNotFound: no token, live or revoked, has this id.
            StorageError: the commit failed (the token still works).
        """
        with self._store.transaction() as state:
            record = state.gateway_tokens.get(token_id)
            if record is None:
                raise GatewayTokenNotFound(f"no gateway token with id '{token_id}'", details={"id": token_id})
            if record.revoked_at is not None:
                return Revoked(record, already=True)
            record = record.model_copy(
                update={"revoked_at": datetime.now(UTC).isoformat(), "sha256": f"revoked-{record.id}"}
            )
            state.gateway_tokens[token_id] = record
            gone = sorted((r for r in state.gateway_tokens.values() if r.revoked_at), key=lambda r: r.revoked_at or "")
            for old in gone[: max(0, len(gone) - MAX_REVOKED_KEPT)]:
                del state.gateway_tokens[old.id]
        self._cache = None
        return Revoked(record, already=False)

    async def list_async(self, *, revoked: bool = False) -> list[TokenRecord]:
        """`list`, run in a store read thread (the REST API: never on the event loop). Raises as `list`."""
        return await in_read_thread(lambda: self.list(revoked=revoked))

    async def create_async(self, name: object) -> tuple[TokenRecord, str]:
        """`create`, run in a store write thread: a write waiting for the store's write lock holds
        no event loop (R-10.2). Raises as `create` (`StorageBusy` after the lock's budget)."""
        return await in_write_thread(lambda: self.create(name))

    async def revoke_async(self, token_id: str) -> Revoked:
        """`revoke`, run in a store write thread (see `create_async`). Raises as `revoke`."""
        return await in_write_thread(lambda: self.revoke(token_id))

    def verify(self, presented: str | None) -> bool:
        """True when `presented` is a current gateway token (constant-time comparison of hashes)."""
        return self.identify(presented) is not None

    def identify(self, presented: str | None) -> str | None:
        """The id of the current gateway token `presented` is (`ENV_TOKEN_ID` for the env token), else None."""
        named = self.identify_named(presented)
        return named[0] if named is not None else None

    def identify_named(self, presented: str | None) -> tuple[str, str | None] | None:
        """`(id, name)` of the current gateway token `presented` is, from one look at the store (the
        gateway's per-call check and its approval card's token name: one stamp, not two); None when
        it is no current token. The env token is `(ENV_TOKEN_ID, "MCP_CENTER_SERVE_GATEWAY_TOKEN")`.

        Raises:
            StorageError: the store cannot be read.
        """
        named = self.identify_cached(presented, inline=True)
        return None if named == STALE else named

    def identify_cached(
        self, presented: str | None, *, inline: bool = False
    ) -> tuple[str, str | None] | Literal["stale"] | None:
        """`identify_named` without reading the store (for the event loop, the gateway's per-call
        check): `STALE` when the tokens changed and must be read first (`await refresh()`, then ask
        again). `inline`: read them here instead (blocking: `identify_named`).

        Raises:
            StorageError: the store cannot be read (PostgreSQL: its change feed is down).
        """
        if not presented:
            return None
        digest = self._digests.get(presented) or _hash(presented)
        if self._env_hash is not None and hmac.compare_digest(digest, self._env_hash):
            found: tuple[str, str | None] | None = ENV_TOKEN_ID, "MCP_CENTER_SERVE_GATEWAY_TOKEN"
        else:
            records = self._current() if inline else self._cached()
            if records is None:
                return STALE
            found = None
            for record in records:
                if hmac.compare_digest(digest, record.sha256):
                    found = record.id, record.name
        if found is not None and presented not in self._digests:
            if len(self._digests) >= DIGESTS_REMEMBERED:
                self._digests.clear()
            self._digests[presented] = digest
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

    async def refresh(self) -> None:
        """Read the tokens again in a store read thread, if they changed (after `identify_cached`
        answered `STALE`).

        Raises:
            StorageError: the store cannot be read.
        """
        await in_read_thread(self._current)

    def _current(self) -> list[TokenRecord]:
        """The live tokens, read from the store (blocking) when the section changed."""
        stamp = self._store.stamp("gateway_tokens")  # taken first: a commit racing the read only reads again
        cache = self._cache
        if cache is not None and cache[0] == stamp:
            return cache[1]
        state = self._store.read_if_fresh() or self._store.read()
        live = [r for r in state.gateway_tokens.values() if r.revoked_at is None]
        self._cache = (stamp, live)
        return live

    def _cached(self) -> list[TokenRecord] | None:
        """The live tokens from memory, or from the store's current snapshot; None: read the store."""
        stamp = self._store.stamp("gateway_tokens")
        cache = self._cache
        if cache is not None and cache[0] == stamp:
            return cache[1]
        state = self._store.read_if_fresh()
        if state is None:
            return None
        live = [r for r in state.gateway_tokens.values() if r.revoked_at is None]
        self._cache = (stamp, live)
        return live
