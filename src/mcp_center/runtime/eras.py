"""Which protocol era a forwarded `tools/call` travels in (R-8.3, R-8.5, issue 12 round 3).

A Streamable HTTP server built on a current SDK speaks two eras: the 2025-11-25 session our
connection opened (`initialize`, `Mcp-Session-Id`, answers often framed as SSE, the server's
own requests on the call's stream) and the 2026-07-28 sessionless request (`_meta` carries the
protocol version, our client info and capabilities; `Mcp-Method`/`Mcp-Name` headers; a plain
JSON answer). The SDK server spends markedly less CPU on the second (measured: about 1.2 ms per
`echo` against about 2 ms), so the gateway's lean path sends a tool's calls that way when it is
safe. This module holds the decision; `runtime/forward.py` does the sending.

What decides, per connection (`EraChoice`):
- the server says it speaks 2026-07-28: one `server/discover` probe, answered with
  `supportedVersions` naming it; any failure or refusal keeps the session for good;
- the tool has shown on a session call that it needs nothing the 2026-07-28 request cannot carry.
  A tool's first call goes over the session. If the server, during it, asked the client
  something (elicitation, sampling, roots) or sent a log message or a list change on the call's
  stream, the tool stays on the session: written against the session era's back-channel
  (`ctx.elicit`, `ctx.session.create_message`, `send_log_message`), it would fail or lose the
  message on a sessionless request. Otherwise its later calls go the 2026-07-28 way.

Elicitation, sampling and roots asked the 2026-07-28 way (an `input_required` result: the
"multi round-trip" flow) are answered through the connection's own callbacks, exactly the ones the
session era uses, so the gateway's forwarding, cards, approvals and refusals apply unchanged, and
the call is re-sent with `inputResponses` and the echoed `requestState` (at most `INPUT_ROUNDS`).

Why a tool is not simply re-sent over the session when it fails the 2026-07-28 way: a call is not
known to be idempotent. The only failures re-sent are the ones the server refuses before running
the tool: `HEADER_MISMATCH` (e.g. a tool whose schema wants `Mcp-Param-*` headers) and
`UNSUPPORTED_PROTOCOL_VERSION`. A tool that ran and then found no back-channel (a tool that asks
only sometimes, and did not ask on its first call) answers the server's own JSON-RPC error to
the agent once and stays on the session from then on (noted in the server's log, R-3.11).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

import mcp_types as types
from mcp.shared.inbound import encode_header_value

__all__ = [
    "DISCOVER_TIMEOUT_S",
    "ENVELOPE_KEYS",
    "INPUT_ROUNDS",
    "MODERN_VERSION",
    "EraChoice",
    "capabilities_of",
    "discovered",
    "envelope_of",
    "is_no_back_channel",
    "modern_envelope",
    "modern_headers",
    "refused_before_running",
    "session_shaped",
    "without_envelope",
]

MODERN_VERSION = "2026-07-28"
"""The sessionless protocol version the lean path may use upstream."""
DISCOVER_TIMEOUT_S = 5.0
"""Seconds the `server/discover` probe may take (inside the first call's own deadline)."""
INPUT_ROUNDS = 10
"""`input_required` rounds of one call before it fails (the SDK's own default)."""
_NO_BACK_CHANNEL = "no back-channel for server-initiated requests"


class EraChoice:
    """What one connection knows about sending a tool's calls the 2026-07-28 way.

    `speaks_modern` is None until the `server/discover` probe answered (`probing` while it runs:
    calls meanwhile go over the session rather than wait).
    """

    def __init__(self) -> None:
        self.speaks_modern: bool | None = None
        self.probing = False
        self._lean: set[str] = set()
        self._session: set[str] = set()

    def modern_for(self, name: object) -> bool:
        """True when a `tools/call` of `name` goes the 2026-07-28 way."""
        return self.speaks_modern is True and isinstance(name, str) and name in self._lean

    def wants_probe(self) -> bool:
        """True when nobody has asked the server yet which versions it speaks."""
        return self.speaks_modern is None and not self.probing

    def learned(self, name: object, needs_session: bool) -> None:
        """A session call of `name` ended; `needs_session` when the server used the call's stream
        for anything but progress (a request of its own, a log message, a list change)."""
        if not isinstance(name, str) or name in self._session:
            return
        if needs_session:
            self._session.add(name)
            self._lean.discard(name)
        else:
            self._lean.add(name)

    def pin(self, name: object) -> None:
        """`name` goes over the session from now on."""
        self.learned(name, True)


def discovered(result: dict[str, Any]) -> bool:
    """True when a `server/discover` result names `MODERN_VERSION` among its supported versions."""
    versions = result.get("supportedVersions")
    return isinstance(versions, list) and MODERN_VERSION in cast(list[object], versions)


def capabilities_of(elicitation: bool, sampling: bool, roots: bool) -> dict[str, Any]:
    """The client capabilities a 2026-07-28 request declares, as the session's `initialize` did
    (the SDK client declares what it has a callback for)."""
    caps: dict[str, Any] = {}
    if elicitation:
        caps["elicitation"] = {"form": {}, "url": {}}
    if sampling:
        caps["sampling"] = {}
    if roots:
        caps["roots"] = {"listChanged": True}
    return caps


def envelope_of(client_info: dict[str, Any], caps: dict[str, Any]) -> dict[str, Any]:
    """The 2026-07-28 `_meta` keys of our requests (version, client info, capabilities), for
    `modern_envelope`; build it once per set of capabilities (`capabilities_of`) and reuse it."""
    return {
        types.PROTOCOL_VERSION_META_KEY: MODERN_VERSION,
        types.CLIENT_INFO_META_KEY: client_info,
        types.CLIENT_CAPABILITIES_META_KEY: caps,
    }


def modern_envelope(
    params: Mapping[str, Any], envelope: Mapping[str, Any], progress_token: str | None = None
) -> dict[str, Any]:
    """A copy of `params` whose `_meta` (a copy too) has `progressToken` set to `progress_token`
    (when given) and the keys of `envelope` (`envelope_of`) added, in one pass (issue 12)."""
    given: Mapping[str, Any] = params.get("_meta") or {}
    if progress_token is None:
        return {**params, "_meta": {**given, **envelope}}
    return {**params, "_meta": {**given, "progressToken": progress_token, **envelope}}


ENVELOPE_KEYS = frozenset(
    {types.PROTOCOL_VERSION_META_KEY, types.CLIENT_INFO_META_KEY, types.CLIENT_CAPABILITIES_META_KEY}
)
"""The `_meta` keys of a 2026-07-28 request's envelope (hop-by-hop: `without_envelope`)."""


def without_envelope(params: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """`params` without the agent's 2026-07-28 envelope in `_meta` (version, client info, capabilities).

    The envelope is hop-by-hop: it describes the agent's exchange with the gateway. Sent on, a
    server reached over a 2025-11-25 session refuses the request ("this connection serves the
    handshake protocol era"), and one reached in 2026-07-28 gets ours (`modern_envelope`). Every
    other `_meta` key (progressToken, the agent's own, other `io.modelcontextprotocol/` keys) stays.

    Returns:
        `params` itself when its `_meta` has no envelope key; else a copy, without `_meta` when
        nothing else was in it (R-8.1, R-8.5).
    """
    meta: object = params.get("_meta") if params else None
    if not isinstance(meta, dict) or ENVELOPE_KEYS.isdisjoint(cast(dict[str, Any], meta)):
        return params
    assert params is not None
    kept = {k: v for k, v in cast(dict[str, Any], meta).items() if k not in ENVELOPE_KEYS}
    out = {k: v for k, v in params.items() if k != "_meta"}
    if kept:
        out["_meta"] = kept
    return out


def modern_headers(method: str, name: str | None) -> dict[str, str]:
    """The headers of a 2026-07-28 POST (`Mcp-Name` for a named method)."""
    headers = {
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
        "mcp-protocol-version": MODERN_VERSION,
        "mcp-method": method,
    }
    if name is not None:
        headers["mcp-name"] = encode_header_value(name)
    return headers


def session_shaped(result: dict[str, Any]) -> dict[str, Any]:
    """A 2026-07-28 result as the session would have answered it: without `resultType` and the
    server's identity in `_meta` (the gateway speaks for itself to the agent)."""
    meta: dict[str, Any] | None = result.get("_meta")  # checked exactly below (parsed JSON)
    if "resultType" not in result and not (type(meta) is dict and types.SERVER_INFO_META_KEY in meta):
        return result
    # Copies and pops rather than comprehensions: no frame of theirs on every answer (issue 12).
    shaped = dict(result)
    shaped.pop("resultType", None)
    if type(meta) is dict:
        rest = dict(meta)
        rest.pop(types.SERVER_INFO_META_KEY, None)
        if rest:
            shaped["_meta"] = rest
        else:
            shaped.pop("_meta", None)
    return shaped


def refused_before_running(code: int) -> bool:
    """A JSON-RPC error a server gives a 2026-07-28 request before running it (safe to re-send)."""
    return code in (types.HEADER_MISMATCH, types.UNSUPPORTED_PROTOCOL_VERSION)


def is_no_back_channel(code: int, message: str) -> bool:
    """The SDK server's error for a tool that asked the client something on a sessionless request."""
    return code == types.INVALID_REQUEST and _NO_BACK_CHANNEL in message
