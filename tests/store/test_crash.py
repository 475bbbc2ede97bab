"""SIGKILL at any instant (R-9.1): every acknowledged write survives, no unanswered write is partly there.

Two tests, both bounded and seeded:

- `test_sigkill_at_random_instants_...`: a child process streams writes (a configuration together
  with its secret, OAuth token rotations, gateway tokens created and revoked, cards and approvals
  opened and closed) and reports each one before and after it; the parent SIGKILLs it `KILLS` times at
  random instants, and after each kill opens the store as a restarted host would and checks it: every
  file parses, no temp or journal is left, every acknowledged write is there, the one write in flight
  is there entirely or not at all, and the planted secret's keyed fingerprint agrees with the
  configuration committed with it. It writes its figures to stderr (kills, writes, kills that landed
  inside a commit, violations). Rerun with more kills or another seed:

      MCP_CENTER_CRASH_KILLS=300 MCP_CENTER_CRASH_SEED=7 .venv/bin/python -m pytest tests/store/test_crash.py -s

- `test_sigkill_before_each_disk_call_of_a_commit_...`: the child kills itself just before each
  primitive disk call of one commit in turn; the state is the old one up to the commit point (the
  journal's rename) and the whole new one after it.

Children are forked from a `forkserver` that preloaded mcp-center, so a restart costs milliseconds.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.forkserver
import os
import random
import signal
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.context import ForkServerContext
from pathlib import Path
from typing import Any

import pytest

from mcp_center.auth.vault import CredentialVault
from mcp_center.config import StdioServerConfig
from mcp_center.secrets import Redactor, SecretCipher, load_or_create_key
from mcp_center.store import JsonStore, StoreState
from mcp_center.store.journal import JOURNAL_FILE
from tests.store import crash_writer
from tests.store.crash_writer import BINDING, SECRET_ID, STREAMS
from tests.support.faulty_disk import FaultyDisk, Op

KILLS = int(os.environ.get("MCP_CENTER_CRASH_KILLS", "30"))
SEED = int(os.environ.get("MCP_CENTER_CRASH_SEED", "20260301"))
MESSAGE_TIMEOUT_S = 30.0


@pytest.fixture(scope="module")
def forkserver() -> Iterator[ForkServerContext]:
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["tests.store.crash_writer"])
    yield context
    server = getattr(multiprocessing.forkserver, "_forkserver")  # noqa: B009 - private: there is no public stop
    server._stop()


def _recv(reader: Connection) -> Any:
    if not reader.poll(MESSAGE_TIMEOUT_S):
        raise TimeoutError(f"the writer said nothing for {MESSAGE_TIMEOUT_S} s")
    return reader.recv()


def _leftovers(mcp_dir: Path) -> list[str]:
    return sorted(p.name for p in mcp_dir.iterdir() if p.name.endswith(".tmp") or p.name == JOURNAL_FILE)


# ----- what a reader can observe of each stream -----------------------------------------------------


def _observe(state: StoreState, cipher: SecretCipher, vault: CredentialVault) -> tuple[dict[str, Any], list[str]]:
    """Each stream's observable value, and the internal inconsistencies found (torn writes)."""
    torn: list[str] = []
    files = state.servers["files"]
    assert isinstance(files.config, StdioServerConfig)
    env = files.config.env
    generation = int(env["GENERATION"])
    secret = cipher.open(state.secrets[SECRET_ID], associated_data=SECRET_ID)
    if secret != f"value-{generation}" or files.version != generation:
        torn.append(f"secret: configuration generation {generation} (version {files.version}) with secret {secret}")
    if cipher.fingerprint(SECRET_ID, secret) != env["TOKEN_FINGERPRINT"]:
        torn.append("secret: the configuration's fingerprint does not match the stored secret")
    grant = vault.read(state, BINDING)
    refresh = int((grant.refresh_token or "rt-?").removeprefix("rt-"))
    if grant.access_token != f"at-{refresh}" and not (refresh == 1 and grant.access_token == "at-1"):
        torn.append(f"oauth: refresh token generation {refresh} stored with access token {grant.access_token}")
    observed = {
        "secret": generation,
        "oauth": refresh,
        "token": frozenset(r.name for r in state.gateway_tokens.values() if r.revoked_at is None),  # live ones
        "card": frozenset(r.id for r in state.interactions.values() if r.state == "pending"),
        "approval": frozenset(r.id for r in state.approvals.values() if r.state == "pending"),
    }
    return observed, torn


def _apply(stream: str, value: Any, op: Any) -> Any:
    if stream in ("secret", "oauth"):
        return op
    kind, name = op
    return value | {name} if kind in ("create", "open") else value - {name}


@dataclass
class _Run:
    """What one child reported: the acknowledged ops per stream, and the op in flight when it died."""

    acked: dict[str, list[Any]] = field(default_factory=lambda: {s: [] for s in STREAMS})
    in_flight: tuple[str, Any] | None = None

    def take(self, message: tuple[Any, ...]) -> None:
        if message[0] == "begin":
            self.in_flight = (message[1], message[2])
        elif message[0] == "ack":
            self.acked[message[1]].append(message[2])
            self.in_flight = None

    @property
    def writes(self) -> int:
        return sum(len(ops) for ops in self.acked.values())


def test_sigkill_at_random_instants_loses_no_acknowledged_write_and_tears_none(
    tmp_path: Path, forkserver: ForkServerContext, record_property: Callable[[str, object], None]
) -> None:
    data_dir = tmp_path / "data"
    mcp_dir = data_dir / "mcp"
    crash_writer.seed_data_dir(data_dir)
    cipher = SecretCipher(load_or_create_key(data_dir, None))
    vault = CredentialVault(JsonStore(mcp_dir), cipher, Redactor())
    model, torn = _observe(JsonStore(mcp_dir).read(), cipher, vault)
    assert torn == []
    rng = random.Random(SEED)  # noqa: S311 - a seeded schedule of kills, not a secret
    figures: Counter[str] = Counter()
    violations: list[str] = []
    started = time.monotonic()
    for kill in range(KILLS):
        reader, writer = forkserver.Pipe(duplex=False)
        child = forkserver.Process(target=crash_writer.run_writer, args=(str(data_dir), rng.randrange(2**32), writer))
        child.start()
        writer.close()
        run = _Run()
        try:
            assert _recv(reader) == ("ready",)
            wanted = rng.randint(1, 25)
            while run.writes < wanted:
                run.take(_recv(reader))
            time.sleep(rng.uniform(0, 0.002))  # the random instant: somewhere in the next write
            os.kill(child.pid or 0, signal.SIGKILL)
            child.join(10)
            while True:
                try:
                    run.take(reader.recv())
                except EOFError:
                    break
        finally:
            reader.close()
            if child.is_alive():
                child.kill()
                child.join(10)
        assert child.exitcode == -signal.SIGKILL, f"kill {kill}: the writer exited with {child.exitcode}"
        figures["kills"] += 1
        figures["writes"] += run.writes
        figures["inside_commit"] += bool(_leftovers(mcp_dir))
        figures["in_flight"] += run.in_flight is not None
        restarted = JsonStore(mcp_dir)  # what the next host (or CLI) does first
        restarted.open()
        left = _leftovers(mcp_dir)
        if left:
            violations.append(f"kill {kill}: {left} left after the restart")
        observed, torn = _observe(restarted.read(), cipher, vault)
        violations += [f"kill {kill}: {t}" for t in torn]
        for stream in STREAMS:
            expected = model[stream]
            for op in run.acked[stream]:
                expected = _apply(stream, expected, op)
            allowed = [expected]
            if run.in_flight is not None and run.in_flight[0] == stream:
                allowed.append(_apply(stream, expected, run.in_flight[1]))
            if observed[stream] not in allowed:
                violations.append(f"kill {kill}: {stream} is {observed[stream]!r}, expected one of {allowed!r}")
            elif len(allowed) == 2 and observed[stream] == allowed[1]:
                figures["in_flight_applied"] += 1
        model = observed
    summary = (
        f"crash test: seed={SEED} kills={figures['kills']} acknowledged_writes={figures['writes']} "
        f"kills_inside_a_commit={figures['inside_commit']} writes_in_flight={figures['in_flight']} "
        f"in_flight_applied={figures['in_flight_applied']} violations={len(violations)} "
        f"seconds={time.monotonic() - started:.1f}"
    )
    sys.stderr.write(summary + "\n")
    record_property("crash_test", summary)
    assert violations == []
    assert figures["kills"] == KILLS
    assert figures["writes"] >= KILLS  # every child acknowledged at least one write before its kill


def test_sigkill_before_each_disk_call_of_a_commit_leaves_the_old_state_or_the_whole_new_one(
    tmp_path: Path, forkserver: ForkServerContext
) -> None:
    dry = tmp_path / "dry"
    crash_writer.seed_data_dir(dry)
    counting = FaultyDisk()
    counting.arm(None, 0)
    cipher = SecretCipher(load_or_create_key(dry, None))
    crash_writer.commit_all_sections(JsonStore(dry / "mcp", disk=counting), cipher, 2)
    calls = list(counting.ops)
    commit_point = calls.index(Op("replace", JOURNAL_FILE)) + 1  # 1-based number of the journal's rename
    outcomes: list[str] = []
    for die_at in range(1, len(calls) + 1):
        data_dir = tmp_path / f"die-{die_at}"
        crash_writer.seed_data_dir(data_dir)
        child = forkserver.Process(target=crash_writer.die_in_commit, args=(str(data_dir), die_at, 2))
        child.start()
        child.join(30)
        assert child.exitcode == -signal.SIGKILL, f"call {die_at}: exit code {child.exitcode}"
        store = JsonStore(data_dir / "mcp")
        store.open()
        assert _leftovers(data_dir / "mcp") == []
        state = store.read()
        key = SecretCipher(load_or_create_key(data_dir, None))
        changed = {
            "servers": state.servers["files"].version == 2,
            "secrets": key.open(state.secrets[SECRET_ID], associated_data=SECRET_ID) == "value-2",
            "interactions": "c-2" in state.interactions,
            "approvals": "a-2" in state.approvals,
            "gateway_tokens": state.gateway_tokens == {},
        }
        assert len(set(changed.values())) == 1, f"killed before call {die_at} ({calls[die_at - 1]}): torn {changed}"
        new = next(iter(changed.values()))
        assert new == (die_at > commit_point), f"killed before call {die_at} ({calls[die_at - 1]}): new={new}"
        outcomes.append("new" if new else "old")
    assert outcomes.count("old") == commit_point
    assert outcomes.count("new") == len(calls) - commit_point
