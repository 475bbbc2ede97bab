"""Recognise a sandbox violation in what a sandboxed server says (R-11.1, R-3.11).

A sandboxed server that tries something its sandbox forbids gets an ordinary error from the
kernel — EACCES or EROFS for a file outside its view, ENETUNREACH or a failed name lookup without
network, EAGAIN from fork at its process limit, ENOMEM at its memory limit, EMFILE at its file
limit — and reports it as it likes: a stack trace on stderr, an `isError` tool result, a JSON-RPC
error. We cannot see the failing system call, but we can recognise those errors in its words. The
request log and the stderr view mark such lines and results as sandbox violations, so a user
looking at a failing sandboxed server sees "the sandbox said no" rather than guessing.

Only texts of sandboxed servers are classified (an unconfined server's EACCES is its own
business). The classification is a hint for people, not a security decision: a server can print
anything. Nothing but the kind and the errno name is kept — never the text it came from.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final, Literal

__all__ = ["Violation", "ViolationKind", "classify_violation"]

ViolationKind = Literal["filesystem", "network", "processes", "memory", "open_files"]
"""What the sandbox refused: a path, the network, a new process, memory, a file descriptor."""

_PATTERNS: Final[tuple[tuple[str, ViolationKind, re.Pattern[str]], ...]] = (
    ("EROFS", "filesystem", re.compile(r"\bEROFS\b|read-only file system", re.IGNORECASE)),
    ("EACCES", "filesystem", re.compile(r"\bEACCES\b|permission denied", re.IGNORECASE)),
    ("EPERM", "filesystem", re.compile(r"\bEPERM\b|operation not permitted", re.IGNORECASE)),
    ("ENETUNREACH", "network", re.compile(r"\bENETUNREACH\b|network is unreachable", re.IGNORECASE)),
    (
        "EAI_AGAIN",
        "network",
        re.compile(
            r"\bEAI_AGAIN\b|temporary failure in name resolution|getaddrinfo (?:EAI_AGAIN|ENOTFOUND)"
            r"|name or service not known",
            re.IGNORECASE,
        ),
    ),
    (
        "OFFLINE",
        "network",
        re.compile(r"\bENOTCACHED\b|network (?:was|is) disabled|network access is disabled", re.IGNORECASE),
    ),
    (
        "EAGAIN",
        "processes",
        re.compile(
            r"\bfork\b.*(?:resource temporarily unavailable|\bEAGAIN\b|retry)|can(?:no|')t fork"
            r"|BlockingIOError: \[Errno 11\]|(?:spawn|thread).*\bEAGAIN\b"
            r"|(?:\bEAGAIN\b|resource temporarily unavailable).*\bforks?\b",
            re.IGNORECASE,
        ),
    ),
    (
        "ENOMEM",
        "memory",
        re.compile(r"\bENOMEM\b|cannot allocate memory|\bMemoryError\b|out of memory|allocation failed", re.IGNORECASE),
    ),
    ("EMFILE", "open_files", re.compile(r"\bEMFILE\b|too many open files", re.IGNORECASE)),
)


@dataclass(frozen=True)
class Violation:
    """One recognised sandbox violation.

    Attributes:
        kind: See `ViolationKind`.
        errno: The errno (or resolver error) name it was recognised by, e.g. `ENETUNREACH`;
            `OFFLINE` for a package manager that needed the network the sandbox withholds.
    """

    kind: ViolationKind
    errno: str

    def to_dict(self) -> dict[str, str]:
        """JSON shape: `{"kind", "errno"}`."""
        return {"kind": self.kind, "errno": self.errno}


_REFUSED: Final = re.compile(r"\bECONNREFUSED\b|connection refused", re.IGNORECASE)


def classify_violation(text: str, *, network: str = "egress") -> Violation | None:
    """The sandbox violation `text` reports, or None (only the first 4 KiB are read).

    Args:
        text: A stderr line, a JSON-RPC error message or a tool result's text.
        network: The sandbox's network policy. With `none`, a refused connection counts too:
            127.0.0.1 inside is the sandbox's own loopback, where nothing but the server listens.
    Returns:
        The first matching violation in the order read-only, access, permission, network,
        name lookup, offline package manager, process limit, memory, file limit (then, for
        `network: none`, ECONNREFUSED).
    """
    sample = text[:4096]
    for name, kind, pattern in _PATTERNS:
        if pattern.search(sample):
            return Violation(kind, name)
    if network == "none" and _REFUSED.search(sample):
        return Violation("network", "ECONNREFUSED")
    return None
