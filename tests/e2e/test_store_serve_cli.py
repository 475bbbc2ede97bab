"""The CLI beside an exported MCP_CENTER_DATABASE_URL asks the serves of that database, never an
unrelated serve of the data directory (trialfix36, R-9.2, R-10.2).

A new user exported the database URL (docs/several-instances.md) while a single-instance serve ran
on the default data directory: `gateway token create` said that serve "accepts it now" (it keeps
other state: it refused the token), and `list` asked that serve for live states. Two real serves
here: one on the data directory's files, one on a real PostgreSQL database.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from mcp_center.config import Settings
from tests.e2e.cluster import cluster_env, start_instance, wait_serving
from tests.support.cli import run_cli
from tests.support.processes import stop_process
from tests.support.serve import ADMIN_TOKEN


def test_the_cli_on_a_database_names_and_asks_its_instances_not_the_data_directorys_serve(
    tmp_path: Path, database_url: str
) -> None:
    env = cluster_env()
    files = start_instance("files", tmp_path, env, None)
    shared = start_instance("shared", tmp_path, env, database_url)
    try:
        wait_serving(files)
        wait_serving(shared)
        display = Settings.load(data_dir=tmp_path, database_url=database_url, environ={}).database_display
        assert display is not None
        exported = {
            "MCP_CENTER_DATABASE_URL": database_url,
            "MCP_CENTER_SECRET_KEY": env["MCP_CENTER_SECRET_KEY"],
            "MCP_CENTER_ADMIN_TOKEN": ADMIN_TOKEN,
        }

        created = run_cli(files.data_dir, "gateway", "token", "create", "x", env=exported)
        assert created.returncode == 0, created.stderr
        assert "the serve of this data directory" not in created.stderr, created.stderr
        assert (
            f"the live instances of {display} accept it now: shared (pid {shared.proc.pid}, {shared.url})"
            in created.stderr
        ), created.stderr
        assert database_url not in created.stderr  # the password stays out

        added = run_cli(files.data_dir, "add", "time", "--", sys.executable, "-c", "pass", env=exported)
        assert added.returncode == 0, added.stderr
        asked_before = files.log_path.read_text(errors="replace").count("/api/mcp/servers")
        listed = run_cli(files.data_dir, "list", "--json", env=exported)
        assert listed.returncode == 0, listed.stderr
        [view] = json.loads(listed.stdout)
        assert view["id"] == "time"
        assert "status" in view, view  # the live state, from the database's instance
        table = run_cli(files.data_dir, "list", env=exported)
        assert table.returncode == 0, table.stderr
        assert "none answered" not in table.stderr, table.stderr
        # The files' serve was not asked (it keeps other state).
        assert files.log_path.read_text(errors="replace").count("/api/mcp/servers") == asked_before
        # A verb that only talks to a serve is not sent to the files' serve either: it says which
        # store's serve it needs (before, it showed the files' serve's approvals as the database's).
        approvals = run_cli(files.data_dir, "approvals", env=exported)
        assert approvals.returncode == 7, (approvals.stdout, approvals.stderr)
        assert f"no mcp-center serve of the database {display} runs on the data directory" in approvals.stderr
        assert database_url not in approvals.stderr
    finally:
        stop_process(shared.proc)
        stop_process(files.proc)
