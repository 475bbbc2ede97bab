"""The child of the crash test (`tests/store/test_crash.py`): streams writes into a data directory until
it is killed, telling its parent before and after each one.

Runs in a process forked from a `forkserver` that preloaded mcp-center, so each of the test's restarts
costs milliseconds. Every write is one store transaction, shaped as the service writes it:

- `secret`: a server's configuration and its secret together (the configuration carries the secret's
  keyed fingerprint, as the connection summary does, so a torn write shows as a mismatch);
- `oauth`: an OAuth token rotation through `CredentialVault.rotate` (refresh and access token in one
  ciphertext, compare-and-set on the presented refresh token);
- `token`: a gateway token created or revoked through `GatewayTokens`;
- `card`: an interaction card created, then answered;
- `approval`: an approval created, then decided.

Messages to the parent: `("ready",)`, then `("begin", stream, op)` and `("ack", stream, op)` around each
write; `op` is what the write does (`k` for counters, `("create", name)` / `("revoke", name)` ...).
"""

from __future__ import annotations

import os
import random
import signal
from datetime import UTC, datetime, timedelta
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from mcp_center.auth.tokens import TokenSet
from mcp_center.auth.vault import Binding, CredentialVault
from mcp_center.config import StdioServerConfig, parse_server_config
from mcp_center.secrets import Redactor, SecretCipher, SecretKind, load_or_create_key, secret_id
from mcp_center.service.gateway_tokens import GatewayTokens
from mcp_center.store import (
    ApprovalRecord,
    Disk,
    GatewayTokenRecord,
    InteractionRecord,
    JsonStore,
    ServerRecord,
    StoreState,
)

__all__ = [
    "BINDING",
    "SECRET_ID",
    "STREAMS",
    "SuicideDisk",
    "commit_all_sections",
    "die_in_commit",
    "file_server",
    "oauth_server",
    "run_writer",
    "seed_data_dir",
]

STREAMS = ("secret", "oauth", "token", "card", "approval")
WEIGHTS = (4, 1, 1, 1, 1)
"""The configuration + secret write is the one that spans two files: most writes are of that kind."""
SECRET_ID = secret_id(SecretKind.ENV, "files", "TOKEN")
RESOURCE = "https://mcp.example.com/mcp"
ISSUER = "https://auth.example.com"
BINDING = Binding("remote", RESOURCE, ISSUER)
T0 = datetime(2026, 3, 1, tzinfo=UTC)
MAX_TOKENS = 3


def file_server(k: int, fingerprint: str) -> ServerRecord:
    """The stdio server whose configuration names generation `k` and its secret's fingerprint."""
    config = parse_server_config(
        {
            "id": "files",
            "name": "Files",
            "transport": "stdio",
            "command": "npx",
            "env": {"GENERATION": str(k), "TOKEN_FINGERPRINT": fingerprint},
            "secret_env": ["TOKEN"],
        }
    )
    return ServerRecord(config=config, version=k, created_at=T0, updated_at=T0)


def oauth_server() -> ServerRecord:
    config = parse_server_config(
        {
            "id": "remote",
            "name": "Remote",
            "transport": "streamable_http",
            "url": RESOURCE,
            "auth": {"kind": "oauth", "binding": {"resource": RESOURCE, "issuer": ISSUER}},
        }
    )
    return ServerRecord(config=config, version=1, created_at=T0, updated_at=T0)


def seed_data_dir(data_dir: Path) -> None:
    """Generation 1 of everything: the file server and its secret, an authorized OAuth binding."""
    cipher = SecretCipher(load_or_create_key(data_dir, None))
    store = JsonStore(data_dir / "mcp")
    vault = CredentialVault(store, cipher, Redactor())
    with store.transaction() as state:
        state.servers["files"] = file_server(1, cipher.fingerprint(SECRET_ID, "value-1"))
        state.secrets[SECRET_ID] = cipher.seal("value-1", associated_data=SECRET_ID)
        state.servers["remote"] = oauth_server()
        vault.write(state, BINDING, grant=("rt-1", "mcp"), access=("at-1", 4102444800.0))
        state.gateway_tokens["seed"] = GatewayTokenRecord(id="seed", name="g-seed", sha256="0" * 64, created_at="0")


def commit_all_sections(store: JsonStore, cipher: SecretCipher, k: int) -> None:
    """One transaction that changes all five sections (for the crash-at-every-call test)."""
    with store.transaction() as state:
        state.servers["files"] = file_server(k, cipher.fingerprint(SECRET_ID, f"value-{k}"))
        state.secrets[SECRET_ID] = cipher.seal(f"value-{k}", associated_data=SECRET_ID)
        _add_card(state, f"c-{k}")
        _add_approval(state, f"a-{k}")
        state.gateway_tokens.clear()


class SuicideDisk(Disk):
    """A `Disk` whose process SIGKILLs itself just before its call number `die_at` (counted from 1)."""

    def __init__(self, die_at: int) -> None:
        self.die_at = die_at
        self.calls = 0

    def _step(self) -> None:
        self.calls += 1
        if self.calls == self.die_at:
            os.kill(os.getpid(), signal.SIGKILL)

    def create(self, path: Path, mode: int) -> int:
        self._step()
        return super().create(path, mode)

    def write(self, fd: int, data: bytes, path: Path) -> None:
        self._step()
        super().write(fd, data, path)

    def fsync(self, fd: int, path: Path) -> None:
        self._step()
        super().fsync(fd, path)

    def replace(self, source: Path, target: Path) -> None:
        self._step()
        super().replace(source, target)

    def unlink(self, path: Path) -> None:
        self._step()
        super().unlink(path)


def die_in_commit(data_dir: str, die_at: int, k: int) -> None:
    """Child of the crash-at-every-call test: commit all sections, dying before disk call `die_at`."""
    cipher = SecretCipher(load_or_create_key(Path(data_dir), None))
    commit_all_sections(JsonStore(Path(data_dir) / "mcp", disk=SuicideDisk(die_at)), cipher, k)


def _add_card(state: StoreState, card_id: str) -> None:
    state.interactions[card_id] = InteractionRecord(
        id=card_id, server_id="files", host_instance="crash-writer", message="Q", created_at=T0, expires_at=T0
    )


def _add_approval(state: StoreState, approval_id: str) -> None:
    state.approvals[approval_id] = ApprovalRecord(
        id=approval_id,
        tool="mcp__files__rm",
        server_id="files",
        server_tool="rm",
        operation_id=approval_id,
        host_instance="crash-writer",
        created_at=T0,
        expires_at=T0 + timedelta(minutes=10),
    )


def run_writer(data_dir: str, seed: int, conn: Connection) -> None:
    """Open the store (completing what a killed predecessor left), then write until killed."""
    root = Path(data_dir)
    store = JsonStore(root / "mcp")
    store.open()
    cipher = SecretCipher(load_or_create_key(root, None))
    vault = CredentialVault(store, cipher, Redactor())
    tokens = GatewayTokens(store)
    rng = random.Random(seed)  # noqa: S311 - a seeded choice of writes, not a secret
    conn.send(("ready",))
    while True:
        stream = rng.choices(STREAMS, weights=WEIGHTS)[0]
        state = store.read()
        op: Any
        if stream == "secret":
            config = state.servers["files"].config
            assert isinstance(config, StdioServerConfig)
            k = int(config.env["GENERATION"]) + 1
            op = k
            conn.send(("begin", stream, op))
            with store.transaction() as txn:
                txn.servers["files"] = file_server(k, cipher.fingerprint(SECRET_ID, f"value-{k}"))
                txn.secrets[SECRET_ID] = cipher.seal(f"value-{k}", associated_data=SECRET_ID)
        elif stream == "oauth":
            stored = vault.read(state, BINDING)
            k = int((stored.refresh_token or "rt-0").removeprefix("rt-")) + 1
            op = k
            conn.send(("begin", stream, op))
            rotated = TokenSet(access_token=f"at-{k}", expires_at=4102444800.0, refresh_token=f"rt-{k}")
            assert vault.rotate(BINDING, presented=stored.refresh_token, tokens=rotated, scope="mcp") is not None
        elif stream == "token":
            live = sorted(
                (r for r in state.gateway_tokens.values() if r.revoked_at is None), key=lambda r: r.created_at
            )
            if len(live) >= MAX_TOKENS:
                op = ("revoke", live[0].name)
                conn.send(("begin", stream, op))
                tokens.revoke(live[0].id)
            else:
                op = ("create", f"g-{rng.randrange(10**9)}")
                conn.send(("begin", stream, op))
                tokens.create(op[1])
        else:
            section = state.interactions if stream == "card" else state.approvals
            pending = sorted(r.id for r in section.values() if r.state == "pending")
            if pending:
                op = ("close", pending[0])
                conn.send(("begin", stream, op))
                with store.transaction() as txn:
                    if stream == "card":
                        txn.interactions[op[1]] = txn.interactions[op[1]].model_copy(update={"state": "accepted"})
                    else:
                        txn.approvals[op[1]] = txn.approvals[op[1]].model_copy(update={"state": "approved"})
            else:
                op = ("open", f"{stream[0]}-{rng.randrange(10**9)}")
                conn.send(("begin", stream, op))
                with store.transaction() as txn:
                    (_add_card if stream == "card" else _add_approval)(txn, op[1])
        conn.send(("ack", stream, op))
