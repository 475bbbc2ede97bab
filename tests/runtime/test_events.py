"""The event bus never blocks a publisher and bounds every subscriber (R-3.11)."""

from __future__ import annotations

import anyio
import pytest

from mcp_center.runtime import EventBus

pytestmark = pytest.mark.anyio


async def test_subscribers_receive_events_in_order_with_a_sequence_number() -> None:
    bus = EventBus()
    async with bus.subscribe() as sub:
        bus.publish("a", n=1)
        bus.publish("b", n=2)
        first, second = await sub.next(), await sub.next()
    assert (first["type"], first["n"], second["type"], second["n"]) == ("a", 1, "b", 2)
    assert second["seq"] == first["seq"] + 1
    assert bus.subscriber_count == 0


async def test_a_slow_subscriber_loses_the_oldest_events_and_is_told_so() -> None:
    bus = EventBus()
    async with bus.subscribe(buffer=3) as sub:
        for n in range(10):
            bus.publish("tick", n=n)
        marker = await sub.next()
        kept = [(await sub.next())["n"] for _ in range(3)]
    assert marker == {"type": "events.dropped", "count": 7}
    assert kept == [7, 8, 9]


async def test_a_waiting_subscriber_wakes_up_on_publish() -> None:
    bus = EventBus()
    got: list[str] = []
    async with bus.subscribe() as sub:
        with anyio.fail_after(2):
            async with anyio.create_task_group() as tg:

                async def wait() -> None:
                    got.append((await sub.next())["type"])

                tg.start_soon(wait)
                await anyio.wait_all_tasks_blocked()
                bus.publish("hello")
    assert got == ["hello"]
