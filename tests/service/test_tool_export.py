"""`agent_tools` waits for slow-starting servers and says which enabled servers it lacks (R-3.2, R-5.1).

A real stdio server (`tests/servers/slow_start_stdio.py`) that sleeps before speaking MCP, as a cold
`uvx` or `npx` does: trusted, tested and enabled while fast, then made slow through its delay file
(its configuration, and so its digest, unchanged), and read by a second `McpCenter` opened with
`connect=False`, as the README's library example does.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_center.config import Settings
from mcp_center.errors import CenterError, ServerTimeout
from mcp_center.models import ConnectionState
from mcp_center.service import McpCenter, UnavailableServer, agent_registry
from tests.support.readiness import ready_in_center
from tests.support.zygote import launch_command

pytestmark = pytest.mark.anyio

SLOW = Path(__file__).resolve().parent.parent / "servers" / "slow_start_stdio.py"


def _slow(server_id: str, delay_file: Path, **extra: Any) -> dict[str, Any]:
    command, *args = launch_command(SLOW, str(delay_file))
    return {"id": server_id, "name": server_id, "transport": "stdio", "command": command, "args": args, **extra}


async def test_an_export_waits_for_a_server_slower_than_a_reads_lazy_wait(
    center: McpCenter, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The export used to give up after `LAZY_CONNECT_WAIT_S` (10 s) and print `[]` for cold
    `uvx`/`npx` servers; it waits for each server up to its own `startup_timeout_s` (60 s here).
    The lazy wait is cut to 0.1 s so a 1.5 s start outlasts it."""
    delay = tmp_path / "delay"
    await ready_in_center(center, _slow("slow", delay))
    delay.write_text("1.5", encoding="utf-8")
    monkeypatch.setattr(agent_registry, "LAZY_CONNECT_WAIT_S", 0.1)
    async with McpCenter.open(center.settings, connect=False) as library:
        with anyio.fail_after(30):
            export = await library.agent_tools("openai")
    assert [tool["function"]["name"] for tool in export.tools] == ["mcp__slow__echo"]
    assert export.unavailable == ()
    assert export.to_dict()["unavailable"] == []


async def test_a_server_not_ready_within_its_startup_timeout_is_named_with_its_error_code(
    center: McpCenter, tmp_path: Path
) -> None:
    """The other servers' tools are still exported; the slow one is `unavailable` with
    `MCP_SERVER_TIMEOUT` (REST JSON too), not silently missing."""
    fast, slow = tmp_path / "fast-delay", tmp_path / "slow-delay"
    await ready_in_center(center, _slow("fast", fast))
    await ready_in_center(center, _slow("slow", slow, startup_timeout_s=1))
    slow.write_text("30", encoding="utf-8")
    async with McpCenter.open(center.settings, connect=False) as library:
        with anyio.fail_after(30):
            export = await library.agent_tools("anthropic")
    assert [tool["name"] for tool in export.tools] == ["mcp__fast__echo"]
    [missing] = export.unavailable
    assert isinstance(missing, UnavailableServer)
    assert (missing.server_id, missing.code) == ("slow", "MCP_SERVER_TIMEOUT")
    assert export.to_dict()["unavailable"] == [missing.to_dict()]
    assert set(missing.to_dict()) == {"server_id", "code", "message"}


async def test_an_enabled_server_the_profile_does_not_start_is_named_with_the_step_it_needs(
    center: McpCenter, tmp_path: Path
) -> None:
    """A stdio server enabled under the `local` profile, read by a library on the `production`
    profile, does not run there without a sandbox (R-2.5): the export names it with the refusal a
    call would get, instead of leaving it out silently."""
    await ready_in_center(center, _slow("local-only", tmp_path / "delay"))
    production = Settings.load(data_dir=center.settings.data_dir, profile="production", environ={})
    async with McpCenter.open(production, connect=False) as library:
        with anyio.fail_after(30):
            export = await library.agent_tools()
    assert export.tools == []
    assert [(s.server_id, s.code) for s in export.unavailable] == [("local-only", "MCP_SANDBOX_REQUIRED")]


async def test_a_server_failing_on_its_reconnects_is_named_at_once_not_waited_for_again(
    center: McpCenter, tmp_path: Path
) -> None:
    """cli40: a server whose every attempt times out cost each export (and each listing of its tools)
    a whole start-up timeout while an automatic reconnect was under way, and `list_tools` started an
    attempt of its own while it waited for its backoff. Known to be failing, it is named at once with
    its last error; a restart after a change (`disconnect`, then a start) is waited for again."""
    delay = tmp_path / "delay"
    await ready_in_center(center, _slow("slow", delay, startup_timeout_s=3))
    manager = center._manager  # pyright: ignore[reportPrivateUsage]
    delay.write_text("30", encoding="utf-8")
    await manager.disconnect("slow")
    with anyio.fail_after(30), pytest.raises(ServerTimeout):
        await manager.connect("slow")  # the first failure: the server is now known to be failing

    async def reconnect() -> None:
        with contextlib.suppress(CenterError):
            await manager.connect("slow")

    async with anyio.create_task_group() as tg:
        tg.start_soon(reconnect)  # as the backoff's next attempt does
        with anyio.fail_after(30):
            await manager.wait_for_status("slow", lambda status: status.state is ConnectionState.CONNECTING)
        with anyio.fail_after(1.5):  # the attempt under way lasts 3 s
            export = await center.agent_tools()
            with pytest.raises(ServerTimeout):
                await center.list_tools("slow")
        assert [(s.server_id, s.code) for s in export.unavailable] == [("slow", "MCP_SERVER_TIMEOUT")]
    assert center.status("slow").state is ConnectionState.ERROR
    with anyio.fail_after(1.5), pytest.raises(ServerTimeout):
        await center.list_tools("slow")  # no attempt of its own: the backoff decides when
    assert center.status("slow").state is ConnectionState.ERROR

    delay.unlink()
    await manager.disconnect("slow")  # what a new authorization does: the next start is waited for
    with anyio.fail_after(30):
        export = await center.agent_tools()
    assert len(export.tools) == 1
    assert export.unavailable == ()
