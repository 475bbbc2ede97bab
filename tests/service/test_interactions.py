"""Durable elicitation through `McpCenter` against a real loopback server (R-6.1, R-6.2, R-6.3)."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import anyio
import pytest

from mcp_center.config import Settings
from mcp_center.errors import (
    CallCancelled,
    CallInterrupted,
    ElicitationAnswerInvalid,
    InteractionClosed,
    InteractionNotDelivered,
    InteractionNotFound,
    ServerTimeout,
)
from mcp_center.service import InteractionAnswer, InteractionCard, McpCenter, ToolCallResult
from mcp_center.store import CallRef, InteractionRecord, store_for
from tests.servers.capabilities import Upstream
from tests.support.backends import stored_text
from tests.support.capabilities import capability_server, ready, remote, while_waiting
from tests.support.waiting import eventually, until

pytestmark = pytest.mark.anyio


@pytest.fixture
def settings(shared_settings: Settings) -> Settings:
    """This module runs on both store backends: the data directory's files and PostgreSQL (R-10.1)."""
    return shared_settings


DEFAULTS = {"name": "Ada", "age": 36, "score": 9.5, "status": "active", "verified": True, "colors": ["red"]}


@pytest.fixture
async def caps() -> AsyncGenerator[tuple[str, Upstream]]:
    async with capability_server() as served:
        yield served


async def _with_card(
    center: McpCenter,
    call: Callable[[], Awaitable[Any]],
    answer: Callable[[dict[str, Any]], Awaitable[Any]],
) -> list[object]:
    """Run `call` in a task; when a card appears, run `answer(card)`; return what the call gave or raised."""
    return await while_waiting(center, call, "interaction", answer)


async def test_a_card_answered_with_the_defaults_resumes_the_call(
    caps: tuple[str, Upstream], center: McpCenter
) -> None:
    url, upstream = caps
    await ready(center, remote("caps", url, tool_policies={"ask": "allow"}))
    seen: dict[str, Any] = {}

    async def answer(card: dict[str, Any]) -> None:
        seen.update(card)
        assert [c.id for c in await center.list_interactions(state="pending")] == [card["id"]]
        with pytest.raises(ElicitationAnswerInvalid) as invalid:
            await center.answer_interaction(card["id"], "accept", {"age": "old"})
        assert invalid.value.details["errors"][0]["field"] == "content.age"
        assert (await center.get_interaction(card["id"])).state == "pending"
        answered = await center.answer_interaction(card["id"], "accept")
        assert isinstance(answered, InteractionAnswer) and answered.result is None
        assert answered.interaction.state == "accepted"

    [result] = await _with_card(center, lambda: center.call_agent_tool("mcp__caps__ask", {"question": "Who?"}), answer)
    assert seen["message"] == "Who?"
    assert seen["defaults"] == DEFAULTS
    assert seen["actions"] == ["accept", "decline", "cancel"]
    assert seen["calls"][0]["exposed_name"] == "mcp__caps__ask"
    assert seen["calls"][0]["caller"] == "agent"
    assert {f["name"]: f["secret"] for f in seen["fields"]}["password"] is True
    assert upstream.elicited == [{"action": "accept", "content": DEFAULTS}]
    assert isinstance(result, ToolCallResult)
    assert result.text.startswith("accept: ")
    [card] = await center.list_interactions()
    assert isinstance(card, InteractionCard)
    assert card.state == "accepted"
    assert card.delivered is True
    assert card.answer_fields == tuple(sorted(DEFAULTS))


@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_a_declined_or_cancelled_card_tells_the_server(
    caps: tuple[str, Upstream], center: McpCenter, action: str
) -> None:
    url, upstream = caps
    await ready(center, remote("caps", url))

    async def answer(card: dict[str, Any]) -> None:
        await center.answer_interaction(card["id"], action)

    [result] = await _with_card(center, lambda: center.call_tool("caps", "ask", {"question": "Q"}), answer)
    assert upstream.elicited == [{"action": action, "content": None}]
    assert isinstance(result, ToolCallResult)
    assert result.text == f"{action}: None"
    [card] = await center.list_interactions()
    assert card.state == ("declined" if action == "decline" else "cancelled")
    assert card.calls[0].caller == "user"
    with pytest.raises(InteractionClosed):
        await center.answer_interaction(card.id, "accept")


async def test_url_mode_is_declined_explicitly_and_leaves_a_closed_card(
    caps: tuple[str, Upstream], center: McpCenter
) -> None:
    url, upstream = caps
    await ready(center, remote("caps", url))
    with anyio.fail_after(10):
        result = await center.call_tool("caps", "ask_url", {})
    assert result.text == "url: decline"
    assert upstream.elicited == [{"action": "decline", "mode": "url"}]
    [card] = await center.list_interactions()
    assert (card.mode, card.state, card.url_origin) == ("url", "declined", "https://example.com")
    assert card.reason is not None and "URL-mode" in card.reason


async def test_a_schema_that_is_not_a_flat_form_is_declined_with_the_reason(
    caps: tuple[str, Upstream], center: McpCenter
) -> None:
    await ready(center, remote("caps", caps[0]))
    with anyio.fail_after(10):
        result = await center.call_tool("caps", "ask_nested", {})
    assert result.text == "nested: decline"
    [card] = await center.list_interactions()
    assert card.state == "declined"
    assert card.reason is not None and "property 'address'" in card.reason


async def test_the_call_deadline_pauses_while_a_card_is_pending(caps: tuple[str, Upstream], center: McpCenter) -> None:
    """The server's call timeout is 1 s; the human takes 1.5 s; the call still succeeds."""
    url, _ = caps
    await ready(center, remote("caps", url, call_timeout_s=1))

    async def answer(card: dict[str, Any]) -> None:
        await anyio.sleep(1.5)  # the human reading the form: longer than the call timeout
        await center.answer_interaction(card["id"], "accept", {"name": "Grace"})

    [result] = await _with_card(center, lambda: center.call_tool("caps", "ask", {"question": "Q"}), answer)
    assert isinstance(result, ToolCallResult)
    assert "'name': 'Grace'" in result.text


async def test_the_deadline_runs_again_after_the_answer(caps: tuple[str, Upstream], center: McpCenter) -> None:
    url, _ = caps
    await ready(center, remote("caps", url, call_timeout_s=1))

    async def answer(card: dict[str, Any]) -> None:
        await center.answer_interaction(card["id"], "accept")

    [result] = await _with_card(center, lambda: center.call_tool("caps", "slow_after_answer", {"seconds": 30}), answer)
    assert isinstance(result, ServerTimeout)


async def test_cancelling_the_call_withdraws_its_pending_card(caps: tuple[str, Upstream], center: McpCenter) -> None:
    url, _ = caps
    await ready(center, remote("caps", url))

    async def answer(card: dict[str, Any]) -> None:
        assert center.cancel("op-ask") is True

    [result] = await _with_card(
        center, lambda: center.call_tool("caps", "ask", {"question": "Q"}, operation_id="op-ask"), answer
    )
    assert isinstance(result, CallCancelled)
    [card] = await center.list_interactions()
    assert card.state == "withdrawn"
    assert card.actions == ()


async def test_a_card_pending_when_the_host_stops_fails_its_call_and_survives_the_restart(
    caps: tuple[str, Upstream], settings: Settings
) -> None:
    url, upstream = caps
    async with McpCenter.open(settings) as center:
        await ready(center, remote("caps", url))

        async def stop(card: dict[str, Any]) -> None:
            await center.interrupt_pending()  # what `serve` does when it is asked to stop

        [result] = await _with_card(center, lambda: center.call_tool("caps", "ask", {"question": "Q"}), stop)
    assert isinstance(result, CallInterrupted)
    assert result.code == "MCP_CALL_INTERRUPTED"
    assert result.details["delivered"] is False
    assert upstream.elicited == []

    async with McpCenter.open(settings) as center:
        [card] = await center.list_interactions()
        assert card.state == "interrupted"
        assert card.delivered is False
        assert card.to_dict()["retry"] == {"offered": True, "done": False, "at": None, "outcome": None}
        assert card.actions == ("retry",)
        with pytest.raises(InteractionNotDelivered) as not_delivered:
            await center.answer_interaction(card.id, "accept")
        assert not_delivered.value.details["retry"]["offered"] is True
        assert upstream.calls == ["ask:Q"]

        async def answer(new_card: dict[str, Any]) -> None:
            await center.answer_interaction(new_card["id"], "decline")

        [retried] = await _with_card(center, lambda: center.answer_interaction(card.id, "retry"), answer)
        assert isinstance(retried, InteractionAnswer) and retried.result is not None
        assert retried.result.text == "decline: None"
        assert retried.interaction.retry.done is True
        assert retried.interaction.retry.outcome == "ok"
        assert retried.to_dict()["result"] == retried.result.to_dict()
        assert upstream.calls == ["ask:Q", "ask:Q"]
        with pytest.raises(InteractionClosed):
            await center.answer_interaction(card.id, "retry")


async def test_a_card_left_pending_by_a_crash_is_marked_interrupted_at_the_next_start(settings: Settings) -> None:
    now = datetime.now(UTC)
    store = store_for(settings)
    store.open()
    with store.transaction() as state:
        state.interactions["crashed"] = InteractionRecord(
            id="crashed",
            server_id="caps",
            host_instance="a-run-that-crashed",
            message="Q",
            requested_schema={"type": "object", "properties": {}},
            calls=[CallRef(operation_id="op", server_id="caps", tool="ask", caller="agent", arguments={"q": 1})],
            created_at=now,
            expires_at=now + timedelta(minutes=10),
        )
    store.close()
    async with McpCenter.open(settings) as center:
        card = await center.get_interaction("crashed")
        assert card.state == "interrupted"
        assert card.retry.offered is True
        with pytest.raises(InteractionNotFound):
            await center.get_interaction("nope")


async def test_a_card_of_another_process_is_listed_and_answered_here_and_the_answer_reaches_its_call(
    caps: tuple[str, Upstream], settings: Settings
) -> None:
    """R-9.2: a second center on the data directory (a library script beside `serve`) asks; the host
    lists the card, answers it, and the script's call resumes with that answer (sealed in transit)."""
    url, upstream = caps
    async with McpCenter.open(settings) as host:
        await ready(host, remote("caps", url))
        async with McpCenter.open(settings, connect=False) as script:
            assert script.instance != host.instance

            async def answer_in_host() -> None:
                cards = await eventually(lambda: host.list_interactions(state="pending"))
                assert cards[0].actions == ("accept", "decline", "cancel")
                with pytest.raises(ElicitationAnswerInvalid):
                    await host.answer_interaction(cards[0].id, "accept", {"age": "old"})
                answered = await host.answer_interaction(cards[0].id, "accept", {"name": "Grace"})
                assert answered.interaction.state == "accepted"
                assert answered.interaction.delivered is False  # on its way to the script

            outcome: list[object] = []

            async def call() -> None:
                outcome.append(await script.call_tool("caps", "ask", {"question": "Q"}))

            with anyio.fail_after(15):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(call)
                    await answer_in_host()
        [card] = await host.list_interactions()
    assert isinstance(outcome[0], ToolCallResult)
    assert outcome[0].text.startswith("accept: ")
    assert upstream.elicited[0]["content"]["name"] == "Grace"
    assert card.state == "accepted"
    assert card.delivered is True
    raw = stored_text(settings, "interactions")
    assert "Grace" not in raw  # only the names of answered fields are kept


async def test_a_card_whose_process_died_is_interrupted_when_found(settings: Settings) -> None:
    now = datetime.now(UTC)
    other = store_for(settings)
    other.open()
    other.join_instance("script-run")
    with other.transaction() as state:
        state.interactions["asked"] = InteractionRecord(
            id="asked",
            server_id="caps",
            host_instance="script-run",
            message="Q",
            requested_schema={"type": "object", "properties": {"name": {"type": "string"}}},
            created_at=now,
            expires_at=now + timedelta(minutes=10),
        )
    async with McpCenter.open(settings) as host:
        assert (await host.get_interaction("asked")).actions == ("accept", "decline", "cancel")
        other.leave_instance("script-run")  # the script's process ends without closing its card
        other.close()
        # Another instance learns it from the database's presence (at once for files, ms for PostgreSQL).
        await until(lambda: not host._store.instance_alive("script-run"))  # pyright: ignore[reportPrivateUsage]
        with pytest.raises(InteractionNotDelivered):
            await host.answer_interaction("asked", "accept", {"name": "Ada"})
        card = await host.get_interaction("asked")
    assert card.state == "interrupted"
    assert card.delivered is False


async def test_an_unanswered_card_expires_and_the_server_gets_cancel(
    caps: tuple[str, Upstream], settings: Settings
) -> None:
    url, upstream = caps
    async with McpCenter.open(dataclasses.replace(settings, elicitation_timeout_s=0.5)) as center:
        await ready(center, remote("caps", url))
        with anyio.fail_after(10):
            result = await center.call_tool("caps", "ask", {"question": "Q"})
        assert result.text == "cancel: None"
        [card] = await center.list_interactions()
        assert card.state == "expired"
    assert upstream.elicited == [{"action": "cancel", "content": None}]


async def test_secret_looking_answers_are_neither_logged_nor_stored(
    caps: tuple[str, Upstream], center: McpCenter, caplog: pytest.LogCaptureFixture
) -> None:
    url, _ = caps
    await ready(center, remote("caps", url))
    secret = "hunter2-very-secret-value"

    async def answer(card: dict[str, Any]) -> None:
        await center.answer_interaction(card["id"], "accept", {"password": secret})

    with caplog.at_level(logging.DEBUG):
        await _with_card(center, lambda: center.call_tool("caps", "ask", {"question": "Q"}), answer)
    assert secret not in caplog.text
    stored = stored_text(center.settings, "interactions")
    assert secret not in stored
    [card] = await center.list_interactions()
    assert card.answer_fields[-1] == "verified"
