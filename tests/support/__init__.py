"""Helpers shared by the tests, one module per subject; conftest files only define fixtures.

- `serve`: a real `mcp-center serve` process (`running_host`, `Host`, its `ADMIN_TOKEN`, `VENV_BIN`).
- `zygote` (and `zygote_server`, its process): the worker's fork server that imported the host once;
  serves and the Python fixture servers are forked from it (`MCP_CENTER_TEST_FORK=0`: plain processes);
  `launch_command` (through `zygote_launcher`) is a stdio command a host runs that is forked there too.
- `shared_host`: one serve a worker's browser, end-to-end and CLI tests take turns on, verified clean
  (or replaced) between turns (`SharedHost`, `leftovers`; the `shared_serve` fixture of tests/conftest.py).
- `mcp_servers`: MCP servers in their own processes (`running_echo_http`, npm `node_server`, `EVERYTHING`).
- `ports`, `processes`, `groups`: loopback ports, process facts and endings (`Process`: a Popen or a
  forked child), process groups.
- `loopback`: an ASGI app on 127.0.0.1 in the test's task group; `gateway`: an agent's MCP client;
  `composed`: the composed app on loopback with an admin client and a gateway token.
- `readiness`: create → trust → test → enable, through the library, the API, or a running serve.
- `api`: the in-process REST API (its `ADMIN_TOKEN`, envelope assertions, bodies, route walk).
- `http`: a sync client's status checks, a request running in a thread, polling a serve.
- `cli`: the CLI in process (`run_cli`), and `CLI`, the console script for process tests.
- `browser`: chromium for Playwright, profiles, login, UI steps.
- `fakes`: fake OAuth servers and a scriptable Streamable HTTP server; `oauth_world`: the broker's
  in-process OAuth world; `capabilities`: the capability server on loopback and event waits.
- `waiting`, `hang`, `results`, `faulty_disk`, `interchange`: bounded waits, hang checks, result
  text, disk fault injection, the secret-value rule for the planner.
- `wire`, `exceptions`: narrowing parsed JSON (`is_object`, `as_object`, `object_or_empty`) and the
  leaves of exception groups, typed for strict pyright (issue 16: `reportUnknown*` on for tests/).

Side by side (issue 16): `scripts/test` runs pytest on pytest-xdist workers, so every helper keeps a
test to itself: a fresh temp directory per test (tests share a worker's serve only while the REST
API and /proc show it clean, `shared_host`, and the echo, capability and server-everything HTTP
servers, which keep nothing between MCP sessions), servers on ports the OS picks (`serve --port 0` and
its serve.json, the test servers print theirs, server-everything writes its own), never a fixed port
such as the default 8765 (another serve on the machine may hold it: `ports.closed_port_url` gives one
that refuses), one PostgreSQL cluster (`postgres`, a Unix socket in its temp dir) and one chromium
per worker process. Process checks look only at a test's own children or process groups. Tests go
to the workers one at a time, the long ones first (`ordering`: its list, and the scheduler
tests/conftest.py gives xdist), so no long test starts last and ends the run alone.

Where the helpers lived before issue 16 (for a branch that still imports them): `tests.e2e.conftest`
→ `serve` / `mcp_servers` / `ports` / `processes`; `tests.api._support` → `api` (`make_ready`,
`STEP_TIMEOUT_S` → `readiness`, `closed_port_url` → `ports`); `tests.auth._support` → `oauth_world`;
`tests.service._capabilities` → `capabilities`; `tests.fakes` → `fakes`; `tests.web._flows` and
`tests.web.conftest` → `browser` (`ready_via_api` → `readiness.add_ready_on_host`);
`tests.interchange._support` → `hang` / `interchange`; `_check`, `Background`, `wait_for`,
`pending_card` of `tests/e2e` test files → `http`; `enable_through_api` → `readiness.add_ready_on_host`.
"""
