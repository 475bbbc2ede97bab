"""The resource subscriptions agents hold on each server, counted per URI (R-8.1).

All of a server's agents share its one upstream session, so the gateway's subscriptions live here,
per server and URI, each with the number of agent subscriptions that hold it:

- a `resources/subscribe` the server accepted adds one holder;
- a `resources/unsubscribe` while another holder remains only drops this one (the server's
  subscription stays, answered `{}` here); the last one is sent to the server and, accepted,
  forgets the URI;
- each new upstream session (a reconnect, a disable and enable, a configuration change) is
  subscribed to every URI still held before it is ready (`Connection._resubscribe`), so a server
  that tells only its subscribers keeps telling the gateway.

Kept while a server is disabled, dropped when it is deleted (`forget`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

__all__ = ["SUBSCRIPTION_METHODS", "ResourceSubscriptions"]

SUBSCRIPTION_METHODS = frozenset({"resources/subscribe", "resources/unsubscribe"})
"""The requests whose `uri` this module counts."""


class ResourceSubscriptions:
    """Per server, the URIs agents subscribed to and how many subscriptions hold each (module doc)."""

    def __init__(self) -> None:
        self._held: dict[str, Counter[str]] = {}

    def of(self, server_id: str) -> Counter[str]:
        """The live counter of `server_id` (URI → holders), created empty: a connection reads it
        when its session starts, so later subscriptions are seen by the next session too."""
        return self._held.setdefault(server_id, Counter())

    def forget(self, server_id: str) -> None:
        """Drop `server_id`'s subscriptions (the server was deleted)."""
        self._held.pop(server_id, None)

    async def forward(
        self,
        server_id: str,
        method: str,
        params: Mapping[str, Any] | None,
        send: Callable[[], Awaitable[dict[str, Any]]],
    ) -> dict[str, Any]:
        """Send a request through `send()` and count it when it is a (un)subscription with a `uri`.

        Returns:
            The server's result; `{}` without asking the server for an unsubscribe while another
            subscription still holds the URI.
        Raises:
            Whatever `send` raises; then nothing is counted.
        """
        uri: object = params.get("uri") if method in SUBSCRIPTION_METHODS and params is not None else None
        if not isinstance(uri, str):
            return await send()
        holders = self.of(server_id)
        if method == "resources/unsubscribe" and holders[uri] > 1:
            holders[uri] -= 1  # another subscription still holds it: the server's stays
            return {}
        result = await send()
        if method == "resources/subscribe":
            holders[uri] += 1  # the server's next sessions are subscribed too
        else:
            holders.pop(uri, None)
        return result
