"""`serve --database-url` refusals as real processes, and `mcp-center migrate --to` (in process), against
PostgreSQL 15 (R-10.1).

- An unreachable database: `serve` stops with STORAGE_UNAVAILABLE (exit 10), names the database
  without its password, and leaves no key, token or record behind.
- A schema newer than the code: STORAGE_SCHEMA_TOO_NEW (exit 11) naming both versions.
- A data directory migrated into PostgreSQL: every section arrives unchanged (OAuth material
  included), the servers stay trusted and callable with their secrets on a `serve` that has the
  data directory's key, the gateway token still works; a second migration into the now full
  database is refused and changes nothing.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import anyio
import httpx2
import psycopg

from mcp_center.config import Settings
from mcp_center.secrets import SecretCipher, SecretKind, load_or_create_key, secret_id
from mcp_center.service import GatewayTokens, McpCenter
from mcp_center.store import SECTIONS, JsonStore, PgStore
from mcp_center.store.pg_schema import code_version
from tests.e2e.cluster import GatewayClient, cluster_env, spawn_instance
from tests.support.cli import CliResult, run_cli
from tests.support.loopback import NO_TLS
from tests.support.mcp_servers import running_echo_http
from tests.support.postgres import PgCluster
from tests.support.processes import stop_process
from tests.support.serve import ADMIN_TOKEN, VENV_BIN, serve_env
from tests.support.waiting import eventually_sync

PASSWORD = "pw-never-shown-4711"


def _serve(data_dir: Path, database_url: str) -> subprocess.CompletedProcess[str]:
    argv = [str(VENV_BIN / "mcp-center"), "serve", "--data-dir", str(data_dir), "--port", "0"]
    return subprocess.run(
        [*argv, "--database-url", database_url],
        capture_output=True,
        text=True,
        env=serve_env(),
        timeout=60,
        check=False,
    )


def test_serve_refuses_an_unreachable_database_with_exit_10_and_creates_nothing(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    done = _serve(data_dir, f"postgresql://mcp:{PASSWORD}@/nowhere?host={tmp_path}")
    assert done.returncode == 10, done.stderr
    assert "error [STORAGE_UNAVAILABLE]" in done.stderr
    assert "postgresql://mcp:***@/nowhere" in done.stderr
    assert PASSWORD not in done.stderr + done.stdout
    left = {p.name for p in data_dir.iterdir()} if data_dir.exists() else set[str]()
    assert not left & {"secret.key", "admin-token", "serve.json", "mcp"}, left


def test_serve_refuses_a_schema_newer_than_the_code_naming_both_versions(tmp_path: Path, database_url: str) -> None:
    store = PgStore(database_url, display="db")
    store.open()
    store.close()
    with psycopg.connect(database_url) as conn:
        conn.execute(
            "INSERT INTO mcp_center.schema_version (version, name) VALUES (%s, 'future')", (code_version() + 7,)
        )
    done = _serve(tmp_path / "data", database_url)
    assert done.returncode == 11, done.stderr
    assert "error [STORAGE_SCHEMA_TOO_NEW]" in done.stderr
    assert f"version {code_version() + 7}" in done.stderr and f"version {code_version()}" in done.stderr
    with psycopg.connect(database_url) as conn:
        assert conn.execute("SELECT count(*) FROM mcp_center.instances").fetchone() == (0,)


async def _prepare(settings: Settings, echo_url: str) -> tuple[str, str]:
    """A data directory with a trusted, tested, enabled server with a secret header, OAuth material
    and a gateway token; returns `(gateway token, planted OAuth plaintext)`."""
    async with McpCenter.open(settings, connect=False) as center:
        body = {
            "name": "Echo",
            "transport": "streamable_http",
            "url": echo_url,
            "secret_headers": ["X-Api-Key"],
            "tool_policies": {"whoami": "allow"},
        }
        view = await center.create_server(body)
        view = await center.set_secret(view.id, "header", "X-Api-Key", "migrated-secret-value")
        await center.trust(view.id, view.digest)
        assert (await center.test(view.id)).ok
        await center.enable(view.id)
        _, token = center.gateway_tokens.create("agent")
    cipher = SecretCipher(load_or_create_key(settings.data_dir, None))
    oauth_id = secret_id(SecretKind.OAUTH, "echo", "grant-of-a-binding")
    with JsonStore(settings.mcp_dir).transaction() as state:
        state.secrets[oauth_id] = cipher.seal("refresh-token-planted", associated_data=oauth_id)
    return token, "refresh-token-planted"


def _migrate(data_dir: Path, database_url: str) -> CliResult:
    """`mcp-center migrate --to URL --data-dir DIR`, in process (issue 16: a set-up verb, not a process test)."""
    argv = ["migrate", "--to", database_url, "--data-dir", str(data_dir)]
    return run_cli(None, *argv, env={"MCP_CENTER_ADMIN_TOKEN": ADMIN_TOKEN})


def test_a_data_directory_migrates_whole_and_its_servers_stay_trusted_and_callable(
    tmp_path: Path, pg_cluster: PgCluster
) -> None:
    database_url = pg_cluster.database()
    settings = Settings.load(data_dir=tmp_path / "files", environ={})
    try:
        with running_echo_http() as echo_url:
            token, planted = anyio.run(_prepare, settings, echo_url)
            done = _migrate(settings.data_dir, database_url)
            assert done.returncode == 0, done.stderr
            assert "migrated" in done.stdout and "1 servers" in done.stdout
            # The admin token stays per data directory: migrate says how to keep the one in use.
            assert f"MCP_CENTER_ADMIN_TOKEN=$(cat {settings.data_dir / 'admin-token'})" in done.stderr

            source = JsonStore(settings.mcp_dir).read()
            target = PgStore(database_url, display="db")
            target.open()
            try:
                copied = target.read()
            finally:
                target.close()
            for section in SECTIONS:
                assert copied.section(section) == source.section(section), section
            oauth_id = secret_id(SecretKind.OAUTH, "echo", "grant-of-a-binding")
            cipher = SecretCipher(load_or_create_key(settings.data_dir, None))
            assert cipher.open(copied.secrets[oauth_id], associated_data=oauth_id) == planted

            # A serve on the database, with the data directory's key and its own (empty) data directory.
            env = {**serve_env(), "MCP_CENTER_SECRET_KEY": (settings.data_dir / "secret.key").read_text().strip()}
            instance = spawn_instance("migrated", tmp_path, env, database_url)
            try:
                headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
                with httpx2.Client(verify=NO_TLS, base_url=instance.url, headers=headers) as api:
                    view = api.get("/api/mcp/servers/echo").json()
                    assert (view["trusted"], view["tested"], view["enabled"]) == (True, True, True), view
                    eventually_sync(lambda: api.get("/api/mcp/servers/echo").json()["status"]["state"] == "ready")
                agent = GatewayClient(instance.url, token, "2026-07-28")
                try:
                    seen: dict[str, Any] = agent.call("mcp__echo__whoami", {})
                finally:
                    agent.close()
            finally:
                stop_process(instance.proc)
            assert "result" in seen, seen
            # The server received the secret header, decrypted on PostgreSQL with the migrated key (never
            # re-entered); the host redacts a known secret value in what the agent sees.
            headers = seen["result"]["structuredContent"]
            assert headers["x-api-key"] == "[redacted]", headers

            again = _migrate(settings.data_dir, database_url)
            assert again.returncode == 4, again.stderr
            assert "error [MIGRATION_TARGET_NOT_EMPTY]" in again.stderr
            after = PgStore(database_url, display="db")
            after.open()
            try:
                assert len(GatewayTokens(after).list()) == 1  # nothing was added
            finally:
                after.close()
    finally:
        pg_cluster.drop(database_url)


def test_the_cli_without_the_database_refuses_the_directory_of_a_database_backed_serve(
    tmp_path: Path, database_url: str
) -> None:
    """A database-backed serve owns the data directory; the CLI run without MCP_CENTER_DATABASE_URL
    said "no servers yet" and created secret.key and mcp/ there. Now every verb that would open the
    directory's files refuses (STORAGE_DATABASE_REQUIRED, exit 4, the database without its password)
    and writes nothing; verbs that ask the serve over REST still work; with the variables the CLI
    reads the database (R-9.2, R-10.1)."""
    env = cluster_env()
    instance = spawn_instance("b", tmp_path, env, database_url)
    try:
        record: dict[str, Any] = json.loads((instance.data_dir / "serve.json").read_text())
        display = Settings.load(data_dir=tmp_path, database_url=database_url, environ={}).database_display
        assert display is not None
        assert record["database"] == display
        before = sorted(path.name for path in instance.data_dir.iterdir())
        for argv in (
            ("list",),
            ("list", "--json"),
            ("show", "time"),
            ("call", "time", "get_current_time"),
            ("add", "Local", "--", "true"),
            ("prompts",),
            ("gateway", "token", "list"),
            ("export", "--format", "claude-desktop"),
        ):
            refused = run_cli(instance.data_dir, *argv)
            assert refused.returncode == 4, (argv, refused.stdout, refused.stderr)
            assert refused.stderr.startswith("error [STORAGE_DATABASE_REQUIRED]: "), (argv, refused.stderr)
            assert f"mcp-center serve (pid {instance.proc.pid})" in refused.stderr
            assert "MCP_CENTER_DATABASE_URL" in refused.stderr and display in refused.stderr
            assert database_url not in refused.stderr  # the password stays out
        assert sorted(path.name for path in instance.data_dir.iterdir()) == before
        approvals = run_cli(instance.data_dir, "approvals", "--json", env={"MCP_CENTER_ADMIN_TOKEN": ADMIN_TOKEN})
        assert approvals.returncode == 0, approvals.stderr
        shared = {"MCP_CENTER_DATABASE_URL": database_url, "MCP_CENTER_SECRET_KEY": env["MCP_CENTER_SECRET_KEY"]}
        listed = run_cli(instance.data_dir, "list", "--json", env=shared)
        assert (listed.returncode, json.loads(listed.stdout)) == (0, []), listed.stderr
    finally:
        stop_process(instance.proc)
    # Stopped, the directory still says where its state is: it read as an empty host, and a serve
    # started there without the database began a second, empty state (database.json, R-9.2).
    before = sorted(path.name for path in instance.data_dir.iterdir())
    stopped = run_cli(instance.data_dir, "list")
    assert stopped.returncode == 4, (stopped.stdout, stopped.stderr)
    assert stopped.stderr.startswith("error [STORAGE_DATABASE_REQUIRED]: "), stopped.stderr
    assert f"keeps its state in the database {display}" in stopped.stderr
    assert database_url not in stopped.stderr
    argv = [str(VENV_BIN / "mcp-center"), "serve", "--data-dir", str(instance.data_dir), "--port", "0"]
    refused_serve = subprocess.run(argv, env=serve_env(), capture_output=True, text=True, timeout=120, check=False)
    assert refused_serve.returncode == 4, refused_serve.stderr
    assert "error [STORAGE_DATABASE_REQUIRED]: " in refused_serve.stderr
    assert sorted(path.name for path in instance.data_dir.iterdir()) == before
    (instance.data_dir / "database.json").unlink()  # the way back to the directory's own files
    files = run_cli(instance.data_dir, "list", "--json")
    assert (files.returncode, json.loads(files.stdout)) == (0, []), files.stderr


def test_serve_with_another_secret_key_refuses_in_one_line_before_its_banner(tmp_path: Path, database_url: str) -> None:
    """trial35 MED 2: a wrong key printed "listening on", then ~6 s later a 44-line traceback ending
    SecretKeyMismatch / "Application startup failed" (R-10.1, R-7.3)."""
    first = Settings.load(data_dir=tmp_path / "first", database_url=database_url, environ={})

    async def open_first() -> None:  # the first instance records its key's check
        async with McpCenter.open(first, connect=False):
            pass

    anyio.run(open_first)
    done = _serve(tmp_path / "second", database_url)
    assert done.returncode == 1, done.stderr  # README's table: SECRET_KEY_MISMATCH exits 1
    errors = [line for line in done.stderr.splitlines() if line.startswith("error [")]
    assert len(errors) == 1 and errors[0].startswith("error [SECRET_KEY_MISMATCH]: the secret key of this instance"), (
        done.stderr
    )
    assert "listening on" not in done.stderr
    assert "Traceback" not in done.stderr and "Application startup failed" not in done.stderr
    with psycopg.connect(database_url) as conn:
        assert conn.execute("SELECT count(*) FROM mcp_center.instances").fetchone() == (0,)


def test_migrate_with_a_key_that_opens_none_of_the_secrets_records_nothing(tmp_path: Path, database_url: str) -> None:
    """fix37: the database recorded the wrong key's check, and every instance with the right key was refused."""
    data_dir = tmp_path / "files"
    added = run_cli(
        data_dir, "add", "Docs", "https://docs.example.net/mcp", "-H", "Authorization: Bearer tok-0042-fix37"
    )
    assert added.returncode == 0, added.stderr
    (data_dir / "secret.key").rename(tmp_path / "kept.key")
    wrong = base64.urlsafe_b64encode(os.urandom(32)).decode("ascii")
    argv = ["migrate", "--to", database_url, "--data-dir", str(data_dir)]
    done = run_cli(None, *argv, env={"MCP_CENTER_SECRET_KEY": wrong})
    assert done.returncode == 1, done.stderr
    assert done.stderr.startswith("error [SECRET_KEY_MISMATCH]: the secret key from MCP_CENTER_SECRET_KEY (env) ")
    with psycopg.connect(database_url) as conn:  # refused before the database was touched: no schema, no check
        assert conn.execute("SELECT to_regclass('mcp_center.meta') IS NULL").fetchone() == (True,)
    right = (tmp_path / "kept.key").read_text().strip()
    assert run_cli(None, *argv, env={"MCP_CENTER_SECRET_KEY": right}).returncode == 0
