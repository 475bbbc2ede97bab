"""Exponential backoff with a floor, a cap and jitter: how long to wait before trying again.

Threat: a server that fails fast (closes a stream at once, refuses connections, answers an empty
resumption) turning every retry loop of ours into a spin — hundreds of requests and log lines a
minute, on both sides (issue 14, items 8, 9 and 12). Every retry loop in mcp-center asks a
`Backoff` for its next delay: it grows by `factor` per attempt from `floor_s` up to `cap_s`, and a
server's own hint (the SSE `retry:` field) is honoured as a *minimum*, never as a reason to go faster.
Jitter (a random fraction taken off each delay) keeps many clients of one server from retrying in step.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Final

__all__ = ["MAX_HONOURED_HINT_S", "Backoff"]

MAX_HONOURED_HINT_S: Final = 300.0
"""A server's retry hint above this many seconds is shortened to it (a hint cannot park us for hours)."""


@dataclass(frozen=True)
class Backoff:
    """A delay policy. All values in seconds.

    Attributes:
        floor_s: The first delay, and the least any delay is.
        cap_s: The largest delay the growth reaches (a server hint may ask for more, up to
            `MAX_HONOURED_HINT_S`).
        factor: Growth per attempt.
        jitter: Up to this fraction of each delay is taken off at random (0 disables jitter).
    """

    floor_s: float
    cap_s: float
    factor: float = 2.0
    jitter: float = 0.2

    def delay(self, attempt: int, *, hint_s: float | None = None, rng: random.Random | None = None) -> float:
        """Seconds to wait before attempt number `attempt + 1` (`attempt` >= 1 failures so far).

        Args:
            attempt: How many attempts failed in a row (1 for the first retry).
            hint_s: The server's own minimum (SSE `retry:` in seconds), or None.
            rng: Random source for the jitter (tests pass a seeded one); None uses the module's.
        Returns:
            `min(cap_s, floor_s * factor ** (attempt - 1))`, minus up to `jitter` of it, never below
            `floor_s`, and never below the hint (itself at most `MAX_HONOURED_HINT_S`).
        """
        grown = min(self.cap_s, self.floor_s * self.factor ** max(attempt - 1, 0))
        # Not cryptographic: jitter only spreads retries of many clients over time.
        fraction = (rng or random).uniform(0.0, self.jitter) if self.jitter > 0 else 0.0
        wait = max(self.floor_s, grown * (1.0 - fraction))
        if hint_s is not None and hint_s > 0:
            wait = max(wait, min(hint_s, MAX_HONOURED_HINT_S))
        return wait
