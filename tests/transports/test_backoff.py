"""Backoff delays: exponential, with a floor, a cap, jitter, and a server hint as a minimum (issue 14)."""

from __future__ import annotations

import random

from mcp_center.transports.backoff import MAX_HONOURED_HINT_S, Backoff


def test_delays_grow_from_the_floor_to_the_cap() -> None:
    policy = Backoff(floor_s=1.0, cap_s=30.0, jitter=0.0)
    assert [policy.delay(n) for n in range(1, 8)] == [1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0]


def test_jitter_takes_off_at_most_its_fraction_and_never_goes_below_the_floor() -> None:
    policy = Backoff(floor_s=0.5, cap_s=10.0, jitter=0.3)
    rng = random.Random(1234)  # noqa: S311 - seeded jitter, not cryptography
    for attempt in range(1, 40):
        grown = min(10.0, 0.5 * 2 ** (attempt - 1))
        delay = policy.delay(attempt, rng=rng)
        assert max(0.5, grown * 0.7) <= delay <= grown


def test_a_server_hint_is_a_minimum_never_a_reason_to_go_faster() -> None:
    policy = Backoff(floor_s=1.0, cap_s=30.0, jitter=0.0)
    assert policy.delay(1, hint_s=0.05) == 1.0  # `retry: 50` cannot make us spin
    assert policy.delay(1, hint_s=5.0) == 5.0
    assert policy.delay(6, hint_s=5.0) == 30.0
    assert policy.delay(1, hint_s=10_000.0) == MAX_HONOURED_HINT_S


def test_the_same_seed_gives_the_same_delays() -> None:
    policy = Backoff(floor_s=1.0, cap_s=60.0)
    first = [policy.delay(n, rng=random.Random(7)) for n in range(1, 10)]  # noqa: S311 - seeded, not crypto
    second = [policy.delay(n, rng=random.Random(7)) for n in range(1, 10)]  # noqa: S311 - seeded, not crypto
    assert first == second
