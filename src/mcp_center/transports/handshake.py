"""What happened to the protocol version in one `initialize` handshake (issue 14, item 10; R-3.1).

MCP 2025-11-25 basic/lifecycle, "Version Negotiation": the client offers the latest version it
supports; the server answers with that version or another one it supports; a client that does not
speak the answered version should disconnect. Servers also refuse an offer outright — a Streamable
HTTP server answering `400 Unsupported protocol version (supported versions: 2025-06-18, ...)`, or a
JSON-RPC error to `initialize` — which the SDK reports as "connection closed" or "an error response".

`HandshakeNotes` records the version offered, the version answered (or that none was), and the text
of a refusal. From it `version_error()` builds an error that names the offered and the supported
versions, and `fallback()` names one version both sides speak, so the host retries the handshake
once with it (our policy: one retry, never a loop).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Final

from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION

from mcp_center.errors import ServerProtocolError
from mcp_center.models import ErrorReason
from mcp_center.secrets import default_redactor

__all__ = ["HandshakeNotes"]

_VERSION: Final = re.compile(r"\b(\d{4}-\d{2}-\d{2})\b")
_MAX_REFUSAL_CHARS: Final = 300


@dataclass
class HandshakeNotes:
    """The versions of one connection's `initialize`, filled in by the tap and the HTTP client.

    Attributes:
        offered: The version our `initialize` carried.
        answered: The `protocolVersion` the server answered, when it answered a result.
        answer_seen: A result to `initialize` arrived (`answered` None then means: no version in it).
        refusal_status: The HTTP status of the refusal, if it came as one.
        retried_from: The version offered first, when the handshake was retried with a fallback.
    """

    offered: str = LATEST_HANDSHAKE_VERSION
    answered: str | None = None
    answer_seen: bool = False
    refusal_status: int | None = None
    retried_from: str | None = None
    _refusals: list[str] = field(default_factory=list[str], repr=False)

    def note_refusal(self, text: str, *, status: int | None = None) -> None:
        """Keep the text of an error answer to `initialize` (the first few, cut), and its HTTP status."""
        if status is not None:
            self.refusal_status = status
        if text and len(self._refusals) < 3:
            self._refusals.append(text[:_MAX_REFUSAL_CHARS])

    def reset_refusal(self) -> None:
        """Forget the refusal (before a retry)."""
        self._refusals.clear()
        self.refusal_status = None
        self.answer_seen = False

    @property
    def refusal(self) -> str | None:
        """The most telling refusal text: the first that speaks of a version, else the first."""
        telling = [t for t in self._refusals if "version" in t.lower()]
        return (telling or self._refusals or [None])[0]

    def server_versions(self) -> list[str]:
        """Versions a refusal says the server supports (the offered one excluded), newest first."""
        if not self.refusal or "version" not in self.refusal.lower():
            return []
        found = {v for v in _VERSION.findall(self.refusal) if v != self.offered}
        return sorted(found, reverse=True)

    def fallback(self) -> str | None:
        """The newest version the server says it supports and we speak, if the offer was refused."""
        if self.retried_from is not None:
            return None
        common = [v for v in self.server_versions() if v in HANDSHAKE_PROTOCOL_VERSIONS]
        return common[0] if common else None

    def version_error(self) -> ServerProtocolError | None:
        """The error for a handshake that failed over the version, or None when it was not about it."""
        ours = ", ".join(HANDSHAKE_PROTOCOL_VERSIONS)
        offered = self.offered
        retried = f" (after {self.retried_from} was refused)" if self.retried_from else ""
        details: dict[str, object] = {"reason": ErrorReason.PROTOCOL.value}
        if self.answer_seen and self.answered not in HANDSHAKE_PROTOCOL_VERSIONS:
            shown = f"protocol version {self.answered!r}" if self.answered else "no protocolVersion"
            details["protocol_version"] = {
                "offered": offered,
                "answered": self.answered,
                "client_supports": list(HANDSHAKE_PROTOCOL_VERSIONS),
            }
            return ServerProtocolError(
                f"the server answered initialize with {shown}, which mcp-center does not speak; mcp-center "
                f"offered {offered}{retried} and speaks {ours}",
                details=details,
            )
        theirs = self.server_versions()
        if not theirs:
            return None
        details["protocol_version"] = {
            "offered": offered,
            "server_supports": theirs,
            "client_supports": list(HANDSHAKE_PROTOCOL_VERSIONS),
        }
        common = [v for v in theirs if v in HANDSHAKE_PROTOCOL_VERSIONS]
        if self.retried_from:
            outcome = f"the retry with {offered} failed too"
        elif common:
            outcome = f"{common[0]} is one both speak"
        else:
            outcome = "none of them is one mcp-center speaks"
        status = f"HTTP {self.refusal_status}: " if self.refusal_status else ""
        said = default_redactor.redact(self.refusal or "")
        return ServerProtocolError(
            f"the server refused protocol version {offered}{retried} ({status}{said!r}); it supports "
            f"{', '.join(theirs)} and mcp-center speaks {ours}: {outcome}",
            details=details,
        )
