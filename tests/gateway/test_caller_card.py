"""`CallerCard`: the approval card's "who asks", built only when read (issue 12, R-5.3)."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_center.gateway.server import CallerCard, caller_named


@pytest.mark.parametrize(
    "client",
    [
        {"name": "claude-code", "version": "2.1"},
        {"name": "x" * 300, "version": "y" * 300},
        {"name": "no-version"},
        {"name": 7, "version": "1"},
        None,
    ],
)
def test_a_caller_card_reads_as_the_dict_caller_named_builds(client: dict[str, Any] | None) -> None:
    card = CallerCard("tok-1", "ci-bot", client)
    expected = caller_named("tok-1", "ci-bot", client)
    assert dict(card) == expected  # what `ApprovalService.wait` stores
    assert card == expected and len(card) == len(expected) and list(card) == list(expected)
    assert card["client"] == expected["client"] and card.get("missing") is None


def test_a_caller_card_builds_its_dict_once_and_only_when_read() -> None:
    client = {"name": "agent", "version": "1"}
    card = CallerCard(None, None, client)
    client["name"] = "renamed before the card was read"
    first = card["client"]
    client["name"] = "renamed after"
    assert first == {"name": "renamed before the card was read", "version": "1"}
    assert card["client"] is first and card["via"] == "gateway" and card["token_id"] is None
