"""A test's HTTP client to a running host (another process): status checks, a request left running in
a thread while the test acts, and bounded polling until the host shows something."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import httpx2

from tests.support.serve import Host

__all__ = ["Background", "check", "pending_card", "wait_for"]


def check(response: Any, status: int) -> dict[str, Any]:
    """Assert `response` has `status`; return its JSON body ({} when it has none)."""
    assert response.status_code == status, response.text
    return response.json() if response.content else {}


class Background:
    """One HTTP request running in a thread (the agent or user waiting for a human)."""

    def __init__(self, send: Callable[[], httpx2.Response]) -> None:
        self.response: httpx2.Response | None = None
        self.error: BaseException | None = None

        def run() -> None:
            try:
                self.response = send()
            except BaseException as exc:  # noqa: BLE001 - reported by result()
                self.error = exc

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()

    def result(self, timeout_s: float = 60) -> httpx2.Response:
        self._thread.join(timeout_s)
        assert not self._thread.is_alive(), "the request did not finish"
        if self.error is not None:
            raise self.error
        assert self.response is not None
        return self.response


def wait_for(fetch: Callable[[], list[dict[str, Any]]], timeout_s: float = 30) -> dict[str, Any]:
    """Poll the host (another process) until `fetch` returns an item; bounded."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        items = fetch()
        if items:
            return items[0]
        time.sleep(0.1)
    raise TimeoutError("nothing appeared")


def pending_card(host: Host) -> dict[str, Any]:
    """The first pending card (elicitation) of `host`, once there is one (bounded: 30 s)."""
    return wait_for(
        lambda: check(host.client.get("/api/interactions", params={"state": "pending"}), 200)["interactions"]
    )
