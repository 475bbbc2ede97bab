"""A user's call that lacks an argument the tool's `inputSchema` requires is refused before it is sent
(R-7.3, bridge39): one check in the service, which REST, the page, the CLI and the library share."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_center.errors import RequestInvalid
from mcp_center.service import McpCenter
from mcp_center.service.tool_arguments import missing_arguments_example, require_arguments
from tests.support.capabilities import capability_server, ready, remote

pytestmark = pytest.mark.anyio

SCHEMA: dict[str, Any] = {"type": "object", "properties": {"a": {}, "b": {}, "c": {}}, "required": ["a", "b"]}


@pytest.mark.parametrize(
    ("schema", "arguments"),
    [
        (SCHEMA, {"a": 1, "b": None}),  # present is enough: a null is the server's to judge
        (SCHEMA, {"a": 1, "b": 2, "extra": 3}),
        ({"type": "object"}, {}),
        ({"type": "object", "required": "a"}, {}),  # not a list: nothing is required here
        ({"type": "object", "required": [1, None]}, {}),  # not names: the server judges its own schema
        ({"type": "object", "properties": {"o": {"type": "object", "required": ["x"]}}}, {"o": {}}),  # top level only
    ],
)
def test_only_a_missing_top_level_required_name_is_refused(schema: dict[str, Any], arguments: dict[str, Any]) -> None:
    require_arguments("t", schema, arguments)


def test_the_refusal_names_each_missing_argument_and_never_a_value() -> None:
    with pytest.raises(RequestInvalid) as caught:
        require_arguments("add", SCHEMA, {"c": "secret-value-0123"})
    assert caught.value.code == "REQUEST_INVALID"
    assert caught.value.message == "missing required arguments 'a', 'b' of tool 'add'"
    assert [e["field"] for e in caught.value.details["errors"]] == ["arguments.a", "arguments.b"]
    assert {e["code"] for e in caught.value.details["errors"]} == {"FIELD_REQUIRED"}
    assert "secret-value-0123" not in str(caught.value.details)
    assert missing_arguments_example(caught.value.details) == '{"a": ..., "b": ...}'
    assert missing_arguments_example(RequestInvalid("arguments: must be a JSON object").details) is None


async def test_the_library_refuses_a_call_without_a_required_argument_before_sending_it(center: McpCenter) -> None:
    async with capability_server() as (url, upstream):
        await ready(center, remote("caps", url))
        with pytest.raises(RequestInvalid) as caught:
            await center.call_tool("caps", "record", {})
        assert caught.value.message == "missing required argument 'note' of tool 'record'"
        assert upstream.calls == []
        assert (await center.call_tool("caps", "record", {"note": "sent"})).text == "recorded sent"
        assert len(upstream.calls) == 1
