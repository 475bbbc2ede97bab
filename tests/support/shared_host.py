"""One `mcp-center serve` that a worker's tests take turns on, clean between turns (issue 16).

Starting a serve costs ~1.6-2.2 s of CPU; the browser and end-to-end tests started one per test
(~100 per run). A `SharedHost` starts one per pytest worker (the `host` fixtures of tests/web and
tests/e2e and the `shared_serve` fixture, all from `tests/conftest.py`'s `shared_host`) and hands it
to one test at a time. Isolation stays real, by a rule the
next test can rely on: every turn starts on a host that looks, through the REST API, like one that
has just started:

- after a test, everything it made that the API can remove is removed (servers, with their
  secrets, connections and debugging records; gateway tokens);
- before and after each test, the host must answer with no server, no gateway token, no
  elicitation card and no approval (pending or closed), must have no child process left (a
  deleted server's process gets a few seconds to go), and its log must hold no logging error
  since the last turn. A host that does not (a card is durable and the API cannot delete it; the
  process died; a request failed) is stopped, its shutdown checked as `running_host` checks it,
  and the next turn gets a new serve in a new data directory.

So a test never sees another test's leftovers: it gets a clean host or a fresh one. Tests that
stop, restart or inspect the serve process or its data directory start their own (`running_host`),
and so do tests that leave a card or an approval (closed ones are durable history the API does not
delete): taking the shared host would only throw it away. Each retirement is written, with the test
and what it left, to `retired.log` in the pool's directory, so the tests that cost a serve can be
found from a run.
"""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path

import httpx2

from tests.support.http import check
from tests.support.processes import descendants, wait_no_descendants
from tests.support.serve import Host, running_host

__all__ = ["SharedHost", "leftovers"]

SERVERS = "/api/mcp/servers"
TOKENS = "/api/gateway/tokens"


def leftovers(host: Host) -> list[str]:
    """What `host` holds that a host just started would not: one line per thing ([] when clean).

    Reads the servers, the gateway tokens, the elicitation cards (every state) and the approvals
    (closed ones included) through the REST API, and the serve's child processes from /proc (a
    just-started serve has none); a process that has exited is a leftover too.

    Raises:
        httpx2.HTTPError: the host did not answer.
    """
    if host.proc.poll() is not None:
        return [f"serve exited with {host.proc.returncode}"]
    found = [f"server {s['id']}" for s in check(host.client.get(SERVERS), 200)["servers"]]
    found += [f"gateway token {t['id']}" for t in check(host.client.get(TOKENS), 200)["tokens"]]
    found += [
        f"card {c['id']} ({c['state']})" for c in check(host.client.get("/api/interactions"), 200)["interactions"]
    ]
    approvals = check(host.client.get("/api/approvals", params={"include_closed": "true"}), 200)["approvals"]
    found += [f"approval {a['id']} ({a['state']})" for a in approvals]
    found += [f"child process {pid}" for pid in sorted(descendants(host.proc.pid))]
    return found


class SharedHost:
    """A `mcp-center serve` lent to one test at a time (`lend`, then `take_back`); `close` stops it.

    Each serve it starts runs in its own directory under `root` (data directory and serve.log);
    `root/retired.log` gets one line per serve retired mid-run (the test, what it left).
    Not thread-safe: one pytest process, one test at a time.
    """

    def __init__(self, root: Path) -> None:
        self._root = root
        self._started = 0
        self._stack: ExitStack | None = None
        self._host: Host | None = None
        self._log_seen = 0

    @property
    def started(self) -> int:
        """How many serves this pool has started (1 when every turn found the host clean)."""
        return self._started

    def lend(self) -> Host:
        """The host for the next test: the current one when it is clean, else a new serve.

        Raises:
            RuntimeError, TimeoutError: a new serve did not start (`running_host`).
        """
        if self._host is not None and not self._clean(self._host):
            self._retire()
        if self._host is None:
            self._started += 1
            place = self._root / f"serve-{self._started}"
            place.mkdir()
            stack = ExitStack()
            self._host = stack.enter_context(running_host(place))
            self._stack = stack
            self._log_seen = 0
        return self._host

    def take_back(self, test: str = "") -> None:
        """After `test` (its pytest node id, for `retired.log`): remove its servers and gateway tokens,
        give their processes up to 15 s to end; a host still not clean is stopped.

        Raises:
            AssertionError: the serve logged a logging error during the turn (the test's fault),
                or its shutdown was not graceful when it was stopped.
        """
        host = self._host
        if host is None:
            return
        log = host.log()
        fresh, self._log_seen = log[self._log_seen :], len(log)
        try:
            if host.proc.poll() is None:
                for server in check(host.client.get(SERVERS), 200)["servers"]:
                    host.client.delete(f"{SERVERS}/{server['id']}")
                for token in check(host.client.get(TOKENS), 200)["tokens"]:
                    host.client.delete(f"{TOKENS}/{token['id']}")
                wait_no_descendants(host.proc.pid)
        finally:
            left = self._leftovers(host)
            if left:
                with (self._root / "retired.log").open("a") as log:
                    log.write(f"serve-{self._started} after {test or '?'}: {', '.join(left[:6])}\n")
                self._retire()
        assert "--- Logging error ---" not in fresh, fresh[-3000:]

    def close(self) -> None:
        """Stop the current serve (its shutdown is checked as `running_host` checks it)."""
        self._retire()

    def _clean(self, host: Host) -> bool:
        return self._leftovers(host) == []

    @staticmethod
    def _leftovers(host: Host) -> list[str]:
        try:
            return leftovers(host)
        except (httpx2.HTTPError, AssertionError, KeyError, TypeError, ValueError) as error:
            return [f"no expected answer: {error!r}"]  # as unclean as a leftover

    def _retire(self) -> None:
        stack, self._stack, self._host = self._stack, None, None
        if stack is not None:
            stack.close()
