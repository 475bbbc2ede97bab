"""A lean answer written from inside a call (`Reply.early`, issue 12) only when the write cannot
wait (R-8.3): an agent that does not read has its connection's writing paused, and a write waiting
inside the call's deadline and admission could be cancelled there, half-marked, so the agent got an
HTTP 500 for a call that ran (a break of perf35). Such an answer, and one through a `send` whose flow
control is unknown, is left to `finish`, after the call's bookkeeping unwinds."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from starlette.types import Message

from mcp_center.gateway._reply import Reply

pytestmark = pytest.mark.anyio

BODY = b'{"jsonrpc":"2.0","id":1,"result":{"content":[]}}'


@dataclass
class FakeFlow:
    write_paused: bool


@dataclass
class FakeCycle:
    """An HTTP cycle as uvicorn's and the direct route's are: a `send` method and its `flow`."""

    flow: FakeFlow
    sent: list[Message] = field(default_factory=list[Message])

    async def send(self, message: Message) -> None:
        self.sent.append(message)


@pytest.mark.parametrize("paused", [False, True])
async def test_an_early_answer_is_written_only_while_the_agents_connection_takes_writes(paused: bool) -> None:
    cycle = FakeCycle(FakeFlow(write_paused=paused))
    reply = Reply(cycle.send)
    await reply.early(BODY)
    if paused:
        assert (reply.done, cycle.sent) == (False, [])
        cycle.flow.write_paused = False
        await reply.finish(BODY)
    else:
        assert reply.done
    assert [m["type"] for m in cycle.sent] == ["http.response.start", "http.response.body"]
    assert cycle.sent[0]["status"] == 200 and cycle.sent[1]["body"] == BODY
    await reply.finish(b"never")  # answered once: a second final message is not written
    assert len(cycle.sent) == 2


async def test_a_send_whose_flow_control_is_unknown_is_answered_after_the_call_unwinds() -> None:
    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)

    reply = Reply(send)
    await reply.early(BODY)
    assert (reply.done, sent) == (False, [])
    await reply.finish(BODY)
    assert [m["type"] for m in sent] == ["http.response.start", "http.response.body"]
