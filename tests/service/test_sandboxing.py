"""Sandboxed stdio servers through `McpCenter` (R-11.1, R-11.2, R-1.4, R-2.1, R-3.11).

In process, with the real escape server (`tests/servers/escape_stdio.py`) in real sandboxes: the
policy is in the summary and the digest, production runs stdio servers only sandboxed, a server's
home goes with it (and never passes to another server added under its id), and what the sandbox
refused is marked in the request log and the stderr view.
"""

from __future__ import annotations

import hashlib
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from mcp_center.config import Settings
from mcp_center.errors import CenterError, SandboxRequired, SandboxWarmUpUnsupported, ServerNotTrusted
from mcp_center.service import McpCenter
from mcp_center.service.sandboxing import home_key
from mcp_center.store import store_for
from mcp_center.transports.sandbox import sandbox_uid
from tests.support.sandbox import escape_command, require_sandbox
from tests.support.waiting import eventually, until

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="bubblewrap is Linux only"),
]


@pytest.fixture(autouse=True)
def _sandbox_available() -> None:
    require_sandbox()


def escape_body(server_id: str = "escape", *, sandboxed: bool = True, **policy: Any) -> dict[str, Any]:
    argv, paths = escape_command()
    body: dict[str, Any] = {"id": server_id, "name": "Escape", "transport": "stdio", "command": argv[0]}
    body["args"] = argv[1:]
    if sandboxed:
        body["sandbox"] = {"paths": [p.model_dump() for p in paths], **policy}
    return body


async def ready(center: McpCenter, body: dict[str, Any]) -> dict[str, Any]:
    view = (await center.create_server(body)).to_dict()
    await center.trust(view["id"], view["digest"])
    result = await center.test(view["id"])
    assert result.ok, result.error
    return (await center.enable(view["id"])).to_dict()


async def text_of(center: McpCenter, server_id: str, tool: str, **arguments: Any) -> tuple[bool, str]:
    result = await center.call_tool(server_id, tool, arguments)
    return not result.is_error, result.text


async def test_production_runs_a_sandboxed_stdio_server_and_refuses_an_unconfined_one(tmp_path: Path) -> None:
    settings = Settings.load(data_dir=tmp_path / "prod", profile="production", environ={})
    async with McpCenter.open(settings) as center:
        plain = (await center.create_server(escape_body("plain", sandboxed=False))).to_dict()
        assert "sandbox" in plain["needs"]
        await center.trust("plain", plain["digest"])
        with pytest.raises(SandboxRequired) as refused:
            await center.test("plain")
        assert refused.value.details["reason"] == "sandbox_required"

        view = await ready(center, escape_body("boxed"))
        assert "sandbox" not in view["needs"] and view["status"]["state"] == "ready"
        assert await text_of(center, "boxed", "echo", text="confined") == (True, "confined")


async def test_the_policy_is_in_the_summary_and_loosening_it_needs_a_new_confirmation(center: McpCenter) -> None:
    """R-1.4, R-2.1: network, limits and paths are high-risk fields."""
    view = await ready(center, escape_body())
    assert view["summary"]["sandbox"]["network"] == "none"
    assert view["summary"]["sandbox"]["max_processes"] == 256
    for change in ({"network": "egress"}, {"memory_mb": None}, {"max_processes": 4096}):
        current = (await center.get_server("escape")).to_dict()
        policy = {**current["sandbox"], **change}
        changed = (
            await center.update_server("escape", {"sandbox": policy, "version": current["version"]}, partial=True)
        ).to_dict()
        assert changed["digest"] != current["digest"], change
        assert (changed["trusted"], changed["tested"], changed["enabled"]) == (False, False, False), change
        await center.trust("escape", changed["digest"])
        assert (await center.test("escape")).ok
        await center.enable("escape")
    unconfined = (await center.get_server("escape")).to_dict()
    dropped = (
        await center.update_server("escape", {"sandbox": None, "version": unconfined["version"]}, partial=True)
    ).to_dict()
    assert dropped["summary"]["sandbox"] is None and dropped["trusted"] is False


async def test_an_unconfined_servers_summary_says_so_and_keeps_the_digest_it_had(center: McpCenter) -> None:
    """trial40: what the user confirms says how the server runs (`"sandbox": null`: unconfined);
    digests confirmed before the summary named the sandbox stay valid (computed without that key)."""
    view = (await center.create_server(escape_body(sandboxed=False))).to_dict()
    assert "sandbox" in view["summary"] and view["summary"]["sandbox"] is None
    before = {k: v for k, v in view["summary"].items() if k != "sandbox"}
    canonical = json.dumps(before, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert view["digest"] == "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()
    assert view["sandbox_host"] is None


def home_of(settings: Settings, server_id: str) -> Path:
    """The host directory of the one current home of `server_id` (`<data>/sandbox/<id>/<stamp>/home`)."""
    homes = list((settings.data_dir / "sandbox" / server_id).glob("*/home"))
    assert len(homes) == 1, homes
    return homes[0]


async def test_the_home_is_kept_between_runs_and_removed_with_the_server(center: McpCenter, settings: Settings) -> None:
    view = await ready(center, escape_body())
    assert await text_of(center, "escape", "write_file", path="/home/mcp/state", text="1") == (True, "written")
    home = home_of(settings, "escape")
    assert home.parent.name == home_key(datetime.fromisoformat(view["created_at"]))
    assert (home / "state").read_text() == "1"
    await center.disable("escape")
    await center.enable("escape")
    assert await text_of(center, "escape", "read_file", path="/home/mcp/state") == (True, "1")
    await center.delete_server("escape")
    assert not (settings.data_dir / "sandbox" / "escape").exists()


async def test_a_server_added_again_under_a_deleted_ones_id_never_gets_its_home(settings: Settings) -> None:
    """R-11.1: a deletion committed while this process was down (by another process, or one that died
    before removing the home) leaves the old files on disk; at the next start they are removed, and
    the server added again under that id starts with an empty home of its own."""
    async with McpCenter.open(settings) as center:
        await ready(center, escape_body())
        assert await text_of(center, "escape", "write_file", path="/home/mcp/creds.txt", text="old") == (
            True,
            "written",
        )
        old_files = list((settings.data_dir / "sandbox" / "escape").glob("**/creds.txt"))
    store = store_for(settings)
    store.open()
    try:
        with store.transaction() as state:  # the commit of a delete whose process then died
            del state.servers["escape"]
    finally:
        store.close()
    assert [path.read_text() for path in old_files] == ["old"]
    async with McpCenter.open(settings) as center:
        await ready(center, escape_body())
        ok, text = await text_of(center, "escape", "read_file", path="/home/mcp/creds.txt")
        assert not ok and text.startswith("ENOENT"), text
        assert not any(path.exists() for path in old_files)
        assert home_of(settings, "escape").parent.name == home_key((await center.get_server("escape")).created_at)


async def test_a_process_on_the_files_of_a_database_serves_directory_removes_no_home(settings: Settings) -> None:
    """The homes of a data directory whose serve keeps its servers in a database are not judged by
    a process that reads the directory's own (empty) files instead: they stay."""
    home = settings.data_dir / "sandbox" / "boxed" / home_key(datetime.now(UTC)) / "home"
    home.mkdir(parents=True)
    (home / "cache").write_text("kept")
    (settings.data_dir / "database.json").write_text('{"database": "postgresql://db/mcp", "since": "x"}\n')
    async with McpCenter.open(settings, connect=False):
        pass
    assert (home / "cache").read_text() == "kept"
    (settings.data_dir / "database.json").unlink()
    async with McpCenter.open(settings, connect=False):
        pass
    assert not (settings.data_dir / "sandbox" / "boxed").exists()


async def test_a_sandbox_directory_that_cannot_be_listed_does_not_stop_the_start(settings: Settings) -> None:
    """The sweep is housekeeping: a `<data>/sandbox` it cannot list (here a file) is logged and left."""
    settings.data_dir.mkdir(parents=True)
    (settings.data_dir / "sandbox").write_text("not a directory")
    async with McpCenter.open(settings, connect=False) as center:
        assert await center.list_servers() == []
    assert (settings.data_dir / "sandbox").read_text() == "not a directory"


async def test_a_running_server_replaced_in_one_commit_stops_using_the_old_home(settings: Settings) -> None:
    """R-11.1, R-9.2: another process deletes a server and adds an equal one under its id so fast that
    this one learns of both in one change (same digest, trusted, tested, enabled): the old process,
    whose home is the old server's, is stopped, the new server starts in an empty home of its own,
    and the old home is removed."""
    async with McpCenter.open(settings) as center:
        await ready(center, escape_body())
        assert await text_of(center, "escape", "write_file", path="/home/mcp/creds.txt", text="old") == (
            True,
            "written",
        )
        old_home = next((settings.data_dir / "sandbox" / "escape").glob("**/creds.txt")).parent
        created = datetime.now(UTC)
        new_home = settings.data_dir / "sandbox" / "escape" / home_key(created) / "home"
        store = store_for(settings)
        store.open()
        try:
            with store.transaction() as state:
                record = state.servers["escape"]
                state.servers["escape"] = record.model_copy(update={"created_at": created})
        finally:
            store.close()

        async def replaced() -> bool:
            try:
                written = await text_of(center, "escape", "write_file", path="/home/mcp/new.txt", text="new")
                ok, text = await text_of(center, "escape", "read_file", path="/home/mcp/creds.txt")
            except CenterError:
                return False  # between the old connection's stop and the new one's start
            # The old process reads creds.txt (or, its home removed under it, writes elsewhere).
            return written == (True, "written") and not ok and text.startswith("ENOENT")

        await eventually(replaced)
        assert (new_home / "new.txt").read_text() == "new"
        await until(lambda: not old_home.parent.exists())


async def test_what_the_sandbox_refused_is_marked_in_the_request_log_and_stderr(center: McpCenter) -> None:
    await ready(center, escape_body())
    ok, text = await text_of(center, "escape", "write_file", path="/etc/escape")
    assert not ok and text.startswith("EROFS")
    ok, _ = await text_of(center, "escape", "connect", host="192.0.2.1", port=443)
    assert not ok
    assert await text_of(center, "escape", "say", text="Error: EACCES: permission denied, open '/root/x'") == (
        True,
        "said",
    )
    logs = await center.logs("escape")
    calls = [e for e in logs.requests if e["method"] == "tools/call"]
    assert [e["violation"] for e in calls] == [
        {"kind": "filesystem", "errno": "EROFS"},
        {"kind": "network", "errno": "ENETUNREACH"},
        None,
    ]
    marked = [line for line in logs.stderr if "violation" in line]
    assert marked and marked[-1]["violation"] == {"kind": "filesystem", "errno": "EACCES"}
    assert "EROFS" not in str(calls[0]["error"]), "the result's text itself is never kept"


async def test_an_unconfined_servers_errors_are_not_called_violations(center: McpCenter) -> None:
    await ready(center, escape_body(sandboxed=False))
    ok, _ = await text_of(center, "escape", "read_file", path="/nonexistent/dir/file")
    assert not ok
    await text_of(center, "escape", "say", text="EACCES: permission denied")
    logs = await center.logs("escape")
    assert all(entry["violation"] is None for entry in logs.requests)
    assert all("violation" not in line for line in logs.stderr)


async def test_the_view_shows_the_hosts_sandbox_and_warns_about_what_will_fail(
    center: McpCenter, tmp_path: Path
) -> None:
    hidden = tmp_path / "bin" / "server"
    hidden.parent.mkdir()
    hidden.write_text("#!/bin/sh\n")
    hidden.chmod(0o755)
    view = (
        await center.create_server(
            {
                "id": "warned",
                "name": "Warned",
                "transport": "stdio",
                "command": str(hidden),
                "sandbox": {"paths": [{"path": str(tmp_path / "absent")}]},
            }
        )
    ).to_dict()
    host = view["sandbox_host"]
    assert host["available"] is True and host["home"] == "/home/mcp"
    if host["mode"] == "setuid":
        assert host["uid"] == sandbox_uid("warned", home_key(datetime.fromisoformat(view["created_at"])))
    codes = {w["code"] for w in view["warnings"]}
    assert {"SANDBOX_COMMAND_HIDDEN", "SANDBOX_PATH_MISSING"} <= codes


async def test_a_server_added_again_under_its_id_runs_as_another_uid(center: McpCenter, tmp_path: Path) -> None:
    """R-11.1 (inst36): on root hosts the uid comes from the id and the creation stamp, so what a
    deleted server wrote into its writable paths is not the uid of the one added again under its id."""
    body: dict[str, Any] = {
        "id": "again",
        "name": "Again",
        "transport": "stdio",
        "command": "/usr/bin/true",
        "sandbox": {},
    }
    first = (await center.create_server(body)).to_dict()
    await center.delete_server("again")
    second = (await center.create_server(body)).to_dict()
    if first["sandbox_host"]["mode"] != "setuid":
        pytest.skip("the server keeps the host user's uid on non-root hosts")
    stamps = [home_key(datetime.fromisoformat(v["created_at"])) for v in (first, second)]
    assert stamps[0] != stamps[1]
    assert first["sandbox_host"]["uid"] == sandbox_uid("again", stamps[0])
    assert second["sandbox_host"]["uid"] == sandbox_uid("again", stamps[1])
    assert first["sandbox_host"]["uid"] != second["sandbox_host"]["uid"]


async def test_warm_up_needs_trust_and_an_npx_or_uvx_command(center: McpCenter) -> None:
    view = (await center.create_server(escape_body())).to_dict()
    with pytest.raises(ServerNotTrusted):
        await center.warm_up_sandbox("escape")
    await center.trust("escape", view["digest"])
    with pytest.raises(SandboxWarmUpUnsupported) as caught:
        await center.warm_up_sandbox("escape")
    assert caught.value.code == "MCP_SANDBOX_WARM_UP_UNSUPPORTED"


async def test_a_home_of_the_layout_before_the_stamp_is_moved_to_its_server_not_lost(settings: Settings) -> None:
    """R-11.1: an upgrade must not lose what a sandboxed server kept in its home (`<id>/home`, `<id>/tmp`
    before homes were stamped): the server of that id adopts it; a legacy home of an id no server has
    is removed."""
    async with McpCenter.open(settings, connect=False) as center:
        await center.create_server(escape_body())
    sandbox = settings.data_dir / "sandbox"
    for server_id in ("escape", "gone"):
        for name in ("home", "tmp"):
            (sandbox / server_id / name).mkdir(parents=True, exist_ok=True)
            (sandbox / server_id / name / "state.json").write_text(f"{server_id}-{name}")
    async with McpCenter.open(settings, connect=False):
        pass
    stamped = list((sandbox / "escape").iterdir())
    assert len(stamped) == 1 and stamped[0].name not in ("home", "tmp"), stamped
    assert (stamped[0] / "home" / "state.json").read_text() == "escape-home"
    assert (stamped[0] / "tmp" / "state.json").read_text() == "escape-tmp"
    assert not (sandbox / "gone").exists()
