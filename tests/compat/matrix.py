"""`scripts/compat`: run real MCP servers through mcp-center and write the compatibility matrix (R-11.3).

Every row goes through a real `mcp-center serve` (its REST API and its gateway at /mcp), the way a
user would: add, trust (confirm the summary digest), warm-up (sandboxed npx/uvx rows: fill the
package cache inside the sandbox), test, enable, list tools, one harmless call whose result is
checked, a prompt and a resource when the server offers them, and the same call through the
gateway with the SDK's client. Rows of servers that need a cloud account also run the call with the
SDK's own stdio client and pass when both fail (or succeed) identically.

    scripts/compat                      every row; writes docs/compatibility.md
    scripts/compat --subset ci          the five rows .ci/run checks; writes .cache/compat/result.md
    scripts/compat --only time-stdio-s  some rows (ids as in the matrix)

Exit status 1 when a row failed. Caches: unconfined rows use the host's npm and uv caches; a
sandboxed row's warm-up fills its sandbox home, which is deleted with the row's server.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from collections.abc import Generator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from mcp_center import __version__
from mcp_center.transports import sandbox_support
from tests.compat.cases import CASES, CI_SUBSET, REPO, Context, Row, result_text, rows, short
from tests.compat.fixtures import local_postgres, page_server, remote_server
from tests.support.exceptions import leaves
from tests.support.gateway import gateway_client
from tests.support.ports import free_port
from tests.support.serve import Host, running_host
from tests.support.wire import object_or_empty

SERVERS = "/api/mcp/servers"
STEPS = ("add", "trust", "warm-up", "test", "enable", "list", "call", "prompts", "resources", "gateway", "≡ SDK")
MARK = {"ok": "✅", "fail": "❌", "n/a": "—", "blocked": "⏭"}
DOC = REPO / "docs" / "compatibility.md"


class StepFailed(Exception):
    """A step's failure, with the reason the matrix prints."""


@dataclass
class RowResult:
    row: Row
    steps: dict[str, str] = field(default_factory=lambda: dict.fromkeys(STEPS, "blocked"))
    notes: list[str] = field(default_factory=list[str])
    server_version: str | None = None
    elapsed_s: float = 0.0
    policy: dict[str, Any] | None = None
    """The sandbox policy the row ran with (sandboxed rows)."""

    @property
    def passed(self) -> bool:
        return all(state in ("ok", "n/a") for state in self.steps.values())

    @property
    def green(self) -> bool:
        """As expected: every step passed, or (a default-policy row) some step failed."""
        return not self.passed if self.row.expect_failure else self.passed


def log(text: str) -> None:
    sys.stderr.write(f"compat: {text}\n")
    sys.stderr.flush()


def api_error(response: httpx2.Response) -> str:
    try:
        error = response.json()["error"]
    except (ValueError, KeyError, TypeError):
        return f"HTTP {response.status_code}"
    detail = object_or_empty(error.get("details"))
    tail: list[Any] = detail.get("stderr_tail") or []
    last = f" — stderr: {tail[-1]}" if tail else ""
    return f"{error['code']}: {error['message']}{last}"


def expect(response: httpx2.Response, *statuses: int) -> dict[str, Any]:
    if response.status_code not in statuses:
        raise StepFailed(api_error(response))
    return response.json() if response.content else {}


# ----- one row -------------------------------------------------------------------------------------


def body_for(row: Row, ctx: Context, url: str | None) -> dict[str, Any]:
    case = row.case
    body: dict[str, Any] = {
        "id": row.row_id,
        "name": f"{case.server} ({row.mode})",
        "transport": case.transport,
        "tool_policies": {case.tool: "allow"},  # the gateway call runs without waiting for a human
        "startup_timeout_s": case.startup_timeout_s,
    }
    if url is not None:
        body["url"] = url
        return body
    assert case.command is not None
    command, args = case.command(ctx)
    env = dict(case.env(ctx))
    body.update(command=command, args=args)
    if row.mode == "sandboxed":
        env.update(case.sandbox_env(ctx))
        body["sandbox"] = case.sandbox(ctx)
    elif row.mode == "default policy":
        body["sandbox"] = {}
    else:
        cwd = ctx.work / "rows" / row.row_id
        cwd.mkdir(parents=True, exist_ok=True)
        body["cwd"] = str(cwd)  # files a server writes into its working directory stay here
    body["env"] = env
    if case.secret_env:
        body["secret_values"] = {"env": dict(case.secret_env)}
    return body


def run_row(host: Host, token: str, row: Row, ctx: Context) -> RowResult:
    result = RowResult(row)
    started = time.monotonic()
    case, rid = row.case, row.row_id
    if not case.reference:
        result.steps["≡ SDK"] = "n/a"
    log(f"{rid}: {case.package} over {case.transport}, {row.mode}")
    with ExitStack() as stack:
        url: str | None = None
        if case.remote is not None:
            port = free_port()
            argv, env, url = case.remote(ctx, port)
            try:
                stack.enter_context(remote_server(argv, port, {**os.environ, **env}, ctx.work / f"{rid}.log"))
            except (RuntimeError, TimeoutError) as exc:
                result.steps["add"] = "fail"
                result.notes.append(f"the remote server did not start: {exc}")
                return result
        client = host.client
        step = "add"
        call_outcome: tuple[bool, str] | None = None
        try:
            body = body_for(row, ctx, url)
            result.policy = body.get("sandbox")
            view = expect(client.post(SERVERS, json=body), 201)
            result.steps["add"] = "ok"
            step = "trust"
            expect(client.post(f"{SERVERS}/{rid}/trust", json={"digest": view["digest"]}), 200)
            result.steps["trust"] = "ok"
            step = "warm-up"
            command = os.path.basename(str(view.get("command") or ""))
            if row.sandboxed and command in ("npx", "uvx"):
                warmed = expect(client.post(f"{SERVERS}/{rid}/sandbox/warm-up"), 200)
                if not warmed["ok"]:
                    raise StepFailed(f"exit code {warmed['exit_code']}: {short(' '.join(warmed['output_tail'][-2:]))}")
                result.steps["warm-up"] = "ok"
                result.notes.append(f"warm-up {warmed['elapsed_ms']} ms")
            else:
                result.steps["warm-up"] = "n/a"
            step = "test"
            tested = expect(client.post(f"{SERVERS}/{rid}/test"), 200)
            if not tested["ok"]:
                error = object_or_empty(tested["error"])
                said = stderr_errors(client, rid)
                raise StepFailed(
                    f"{error.get('code')}: {error.get('message')}" + (f" — stderr: {said}" if said else "")
                )
            result.server_version = f"{tested.get('server_name')} {tested.get('server_version')}"
            result.steps["test"] = "ok"
            step = "enable"
            enabled = expect(client.post(f"{SERVERS}/{rid}/enable"), 200)
            if enabled["status"]["state"] != "ready":
                raise StepFailed(f"state {enabled['status']['state']}: {enabled['status'].get('error')}")
            result.steps["enable"] = "ok"
            step = "list"
            tools = expect(client.get(f"{SERVERS}/{rid}/tools"), 200)["tools"]
            if case.tool not in {t["name"] for t in tools}:
                raise StepFailed(f"no tool {case.tool} among {len(tools)}")
            result.steps["list"] = "ok"
            step = "call"
            answer = client.post(f"{SERVERS}/{rid}/tools/{case.tool}/call", json={"arguments": case.arguments(ctx)})
            if case.reference and answer.status_code == 502:
                # A JSON-RPC error from the server (MCP_SERVER_ERROR): compared with the SDK's below.
                details = answer.json()["error"]["details"]
                call_outcome = (True, f"rpc {details.get('rpc_code')}: {answer.json()['error']['message']}")
            else:
                called = expect(answer, 200)
                call_outcome = (bool(called.get("isError")), result_text(called))
            if case.reference:
                result.steps["call"] = "ok"  # judged by the reference step below
                result.notes.append(f"call {'failed' if call_outcome[0] else 'answered'}: {short(call_outcome[1])}")
            elif call_outcome[0] or not case.check(call_outcome[1], ctx):
                raise StepFailed(f"unexpected result: {short(call_outcome[1])}")
            else:
                result.steps["call"] = "ok"
            result.steps["prompts"] = prompts_step(client, rid, result)
            result.steps["resources"] = resources_step(client, rid, result)
            step = "gateway"
            time.sleep(case.call_interval_s)
            result.steps["gateway"] = gateway_step(host, token, row, ctx, call_outcome, result)
            if case.reference:
                step = "≡ SDK"
                result.steps["≡ SDK"] = reference_step(row, ctx, call_outcome, result)
        except StepFailed as exc:
            result.steps[step] = "fail"
            result.notes.append(f"{step}: {exc}")
        except Exception as exc:  # noqa: BLE001 - any failure is this row's, never the whole run's
            result.steps[step] = "fail"
            leaf = leaves(exc)[0]
            result.notes.append(f"{step}: {type(leaf).__name__}: {short(str(leaf))}")
        finally:
            deleted = client.delete(f"{SERVERS}/{rid}")
            if deleted.status_code not in (204, 404):
                result.notes.append(f"delete: {api_error(deleted)}")
    result.elapsed_s = time.monotonic() - started
    state = (
        ("failed as expected" if result.green else "PASSED unexpectedly")
        if row.expect_failure
        else ("green" if result.green else "FAILED")
    )
    log(f"{rid}: {state} in {result.elapsed_s:.1f} s")
    return result


def stderr_errors(client: httpx2.Client, rid: str) -> str:
    """The lines of the server's stderr that name an error (what a failed start said), shortened."""
    lines = [item["line"] for item in client.get(f"{SERVERS}/{rid}/logs").json().get("stderr", [])]
    telling = [line for line in lines if "rror" in line or "denied" in line.lower()] or lines[-2:]
    return short(" | ".join(telling[-3:]), 300)


def prompts_step(client: httpx2.Client, rid: str, result: RowResult) -> str:
    prompts = [p for p in expect(client.get("/api/prompts"), 200)["prompts"] if p["server_id"] == rid]
    if not prompts:
        return "n/a"
    prompt = min(prompts, key=lambda p: sum(1 for a in p["arguments"] if a["required"]))
    arguments = {a["name"]: "compat" for a in prompt["arguments"] if a["required"]}
    got = client.post(f"/api/prompts/{prompt['name']}/get", json={"arguments": arguments})
    if got.status_code != 200:
        result.notes.append(f"prompts: {prompt['name']}: {api_error(got)}")
        return "fail"
    result.notes.append(f"{len(prompts)} prompts; got {prompt['prompt']}")
    return "ok"


def resources_step(client: httpx2.Client, rid: str, result: RowResult) -> str:
    found = expect(client.get("/api/resources", params={"server_id": rid, "limit": 500}), 200)["resources"]
    plain = [r for r in found if "uri" in r]
    if not found:
        return "n/a"
    if not plain:
        result.notes.append(f"{len(found)} resource templates, no plain resource to read")
        return "n/a"
    read = client.post("/api/resources/read", json={"server_id": rid, "uri": plain[0]["uri"]})
    if read.status_code != 200:
        result.notes.append(f"resources: {plain[0]['uri']}: {api_error(read)}")
        return "fail"
    result.notes.append(f"{len(plain)} resources; read {plain[0]['uri']}")
    return "ok"


def gateway_step(host: Host, token: str, row: Row, ctx: Context, direct: tuple[bool, str], result: RowResult) -> str:
    aliases = expect(host.client.get("/api/tools"), 200)["aliases"]
    names = [name for name, a in aliases.items() if a["server_id"] == row.row_id and a["tool"] == row.case.tool]
    if not names:
        raise StepFailed(f"the gateway lists no tool {row.case.tool} of {row.row_id}")

    async def call() -> tuple[bool, str]:
        with anyio.fail_after(180):
            async with gateway_client(host.url, token, timeout_s=180) as client:
                try:
                    answer = await client.call_tool(names[0], row.case.arguments(ctx))
                except MCPError as exc:  # the gateway passes a server's JSON-RPC error through
                    return True, f"rpc {exc.code}: {exc.message}"
                texts = [getattr(item, "text", "") for item in answer.content]
                return bool(answer.is_error), "\n".join(texts)

    via_gateway = anyio.run(call)
    if row.case.reference:
        if not same_outcome(via_gateway, direct):
            raise StepFailed(f"the gateway's answer differs: {short(via_gateway[1])}")
        result.notes.append(f"through the gateway: {short(via_gateway[1], 80)}")
    elif via_gateway[0] or not row.case.check(via_gateway[1], ctx):
        raise StepFailed(f"unexpected result through the gateway: {short(via_gateway[1])}")
    return "ok"


def same_outcome(sdk: tuple[bool, str], ours: tuple[bool, str]) -> bool:
    """Identical outcomes; mcp-center words a server's JSON-RPC error in its own message (`rpc CODE:
    the server answered ... with error CODE: <the server's message>`), which must quote the SDK's."""
    if sdk == ours:
        return True
    if not (sdk[0] and ours[0] and sdk[1].startswith("rpc ")):
        return False
    code, _, message = sdk[1].partition(": ")
    return ours[1].startswith(code + ":") and ours[1].endswith(message)


def reference_step(row: Row, ctx: Context, ours: tuple[bool, str], result: RowResult) -> str:
    """Run the same command with the SDK's own stdio client; pass when the outcome is identical."""
    case = row.case
    assert case.command is not None
    command, args = case.command(ctx)
    env = {**os.environ, **case.env(ctx), **case.secret_env}

    async def call() -> tuple[bool, str]:
        with anyio.fail_after(300):
            params = StdioServerParameters(command=shutil.which(command) or command, args=args, env=env)
            async with Client(params, mode="legacy", cache=None) as client:
                try:
                    answer = await client.call_tool(case.tool, case.arguments(ctx))
                except MCPError as exc:
                    return True, f"rpc {exc.code}: {exc.message}"
                return bool(answer.is_error), "\n".join(getattr(item, "text", "") for item in answer.content)

    sdk = anyio.run(call)
    if not same_outcome(sdk, ours):
        result.notes.append(f"the SDK's client got {short(sdk[1])!r}, mcp-center {short(ours[1])!r}")
        return "fail"
    result.notes.append("identical to the SDK's own client")
    return "ok"


# ----- fixtures and the run ------------------------------------------------------------------------


def prepare_files(ctx: Context) -> None:
    ctx.files.mkdir(parents=True, exist_ok=True)
    (ctx.files / "notes.txt").write_text("compat notes: read through server-filesystem\n")
    from tests.compat.fixtures import PAGE_HTML

    (ctx.files / "page.html").write_text(PAGE_HTML)
    for path in (ctx.work, ctx.files, ctx.files / "notes.txt", ctx.files / "page.html"):
        path.chmod(0o755 if path.is_dir() else 0o644)  # a sandboxed server may run as another uid


def prepare_repo(ctx: Context) -> None:
    if ctx.repo.exists():
        shutil.rmtree(ctx.repo)
    ctx.repo.mkdir(parents=True)
    git = ["git", "-C", str(ctx.repo), "-c", "user.name=compat", "-c", "user.email=compat@localhost"]
    subprocess.run([*git, "init", "-q"], check=True)
    (ctx.repo / "README").write_text("compat\n")
    subprocess.run([*git, "add", "README"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "compat: first commit"], check=True)
    subprocess.run(["chmod", "-R", "a+rX", str(ctx.repo)], check=True)


@contextmanager
def fixtures(ctx: Context, selected: list[Row]) -> Generator[None]:
    needed = {name for row in selected for name in row.case.fixtures}
    with ExitStack() as stack:
        if "files" in needed:
            prepare_files(ctx)
        if "repo" in needed:
            prepare_repo(ctx)
        if "page" in needed:
            ctx.page_url = stack.enter_context(page_server())
        if "postgres" in needed:
            ctx.pg_socket, ctx.pg_url = stack.enter_context(local_postgres(ctx.work / "pg"))
        yield


def tool_version(argv: list[str]) -> str:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    except OSError:
        return "missing"
    return (done.stdout or done.stderr).strip().splitlines()[0] if (done.stdout or done.stderr) else "?"


def host_line() -> str:
    support = sandbox_support(refresh=True)
    mode = (
        "mcp-center ran as root: sandboxed servers ran as their own unprivileged uid (setpriv), no user namespace"
        if support.mode == "setuid"
        else "sandboxed servers ran in an unprivileged user namespace"
    )
    uv = tool_version([str(Path(sys.executable).parent / "uv"), "--version"])
    commit = tool_version(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"])
    return (
        f"Linux {platform.release()}, {tool_version(['bwrap', '--version'])} ({mode}); "
        f"node {tool_version(['node', '--version'])}, npm {tool_version(['npm', '--version'])}, {uv}; "
        f"mcp-center {__version__} at commit {commit}"
    )


def markdown(results: list[RowResult], command: str) -> str:
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "# Compatibility matrix",
        "",
        f"Generated by `{command}` on {now}; do not edit by hand (the script is `tests/compat/`).",
        f"Host: {host_line()}.",
        "",
        "Each row is one server, transport and mode, run through a real `mcp-center serve`: **add**, **trust** "
        "(confirm the summary digest), **warm-up** (sandboxed npx/uvx rows: the package manager fills the "
        "sandbox's cache, with egress for that run only), **test**, **enable**, **list** tools, one harmless "
        "**call** with a checked result, **prompts** and **resources** when the server offers them (one got, "
        "one read), the same call through the **gateway** at `/mcp` with the SDK's client, and for servers "
        "that need a cloud account, the same call with the SDK's own stdio client (**≡ SDK**: identical "
        "outcome). *Unconfined* runs the server as mcp-center's user; *sandboxed* runs it in the bubblewrap "
        "sandbox with the policy in the notes (default: network none, no extra paths, 4096 MiB, 256 "
        "processes, 1024 open files); *default policy* runs a server whose sandboxed row needed a change "
        "with the default policy, to show what goes wrong without it; *remote* servers are processes "
        "mcp-center only connects to.",
        "",
        "✅ passed · ❌ failed (reason in the notes) · — not offered / not applicable · "
        "⏭ not run (an earlier step failed)",
        "",
        "| Row | Server | Package | Transport | Mode | " + " | ".join(STEPS) + " |",
        "|---|---|---|---|---|" + "---|" * len(STEPS),
    ]
    lines += [
        f"| `{r.row.row_id}` | {r.row.case.server} | `{r.row.case.package}` | {r.row.case.transport} "
        f"| {r.row.mode} | {' | '.join(MARK[r.steps[s]] for s in STEPS)} |"
        for r in results
    ]
    green = sum(1 for r in results if r.passed and not r.row.expect_failure)
    expected = [r for r in results if r.row.expect_failure]
    lines += ["", f"{green} of {len(results) - len(expected)} rows green."]
    if expected:
        lines.append(
            f"{sum(1 for r in expected if r.green)} of {len(expected)} *default policy* rows failed as expected: "
            "they run a server that needs a policy change with the default policy instead, and the notes "
            "quote the exact reason the user sees."
        )
    lines += ["", "## Notes", ""]
    for r in results:
        parts: list[str] = []
        if r.row.mode == "sandboxed":
            policy = json.dumps(r.policy)
            why = f" — {r.row.case.sandbox_note}" if r.row.case.sandbox_note else " (the default policy)"
            parts.append(f"sandbox policy `{policy}`{why}")
        elif r.row.expect_failure:
            parts.append(
                "the default policy, to show why the change is needed: "
                + ("failed as expected" if r.green else "**passed: the change is not needed after all**")
            )
        if r.server_version:
            parts.append(f"server says {r.server_version}")
        parts += r.notes
        parts.append(f"{r.elapsed_s:.1f} s")
        lines.append((f"- `{r.row.row_id}`: " + "; ".join(parts)).replace(str(REPO), "."))
    lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/compat", description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--subset", choices=["ci"], help="only the rows .ci/run checks")
    parser.add_argument("--only", nargs="+", metavar="ROW", help="only these row ids")
    parser.add_argument(
        "--out",
        type=Path,
        help="where to write the matrix (default: docs/compatibility.md "
        "for a full run, .cache/compat/result.md otherwise)",
    )
    parser.add_argument("--work", type=Path, default=REPO / ".cache" / "compat", help="work directory")
    args = parser.parse_args(argv)
    selected = rows(CASES)
    if args.subset == "ci":
        selected = [r for r in selected if r.row_id in CI_SUBSET]
    if args.only:
        unknown = set(args.only) - {r.row_id for r in selected}
        if unknown:
            parser.error(f"unknown rows: {', '.join(sorted(unknown))}")
        selected = [r for r in selected if r.row_id in args.only]
    full = not args.subset and not args.only
    out: Path = args.out or (DOC if full else args.work / "result.md")
    work: Path = args.work.resolve()
    host_dir = work / "host"
    if host_dir.exists():
        shutil.rmtree(host_dir)
    host_dir.mkdir(parents=True)
    ctx = Context(work)
    with fixtures(ctx, selected), running_host(host_dir) as host:
        token = expect(host.client.post("/api/gateway/tokens", json={"name": "compat"}), 201)["token"]
        results = [run_row(host, token, row, ctx) for row in selected]
    command = (
        "scripts/compat"
        + (" --subset ci" if args.subset else "")
        + (" --only " + " ".join(args.only) if args.only else "")
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(markdown(results, command), encoding="utf-8")
    log(f"wrote {out}: {sum(1 for r in results if r.green)} of {len(results)} rows green")
    return 0 if all(r.green for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
