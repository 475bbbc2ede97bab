"""The servers of the compatibility matrix (R-11.3): what runs, how it is called, what counts as right.

Each `Case` is one server on one transport; stdio cases give two rows (unconfined and sandboxed),
remote ones one. `sandbox` is the policy the sandboxed row uses and `sandbox_note` why it differs
from the default (network none, no extra paths): that difference is the configuration change a
user needs, and the matrix prints it.
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tests.support.wire import is_object

__all__ = ["CASES", "CI_SUBSET", "Case", "Context", "Row", "rows"]

REPO = Path(__file__).resolve().parents[2]
FASTMCP_SERVER = REPO / "tests" / "compat" / "fastmcp_server.py"
LOOPBACK_PRELOAD = REPO / "tests" / "e2e" / "node" / "loopback-only.cjs"

EVERYTHING = "@modelcontextprotocol/server-everything@2026.8.31"
FILESYSTEM = "@modelcontextprotocol/server-filesystem@2026.8.31"
MEMORY = "@modelcontextprotocol/server-memory@2026.8.31"
THINKING = "@modelcontextprotocol/server-sequential-thinking@2026.8.31"
POSTGRES = "@modelcontextprotocol/server-postgres@0.6.2"
PLAYWRIGHT = "@playwright/mcp@0.0.83"
GITHUB = "@modelcontextprotocol/server-github@2025.4.8"
BRAVE = "@modelcontextprotocol/server-brave-search@0.6.2"
TIME = "mcp-server-time==2026.10.19"
FETCH = "mcp-server-fetch==2026.10.24"
GIT = "mcp-server-git==2026.10.19"
MARKITDOWN = "markitdown-mcp==0.0.1a8"
FASTMCP = "fastmcp==4.2.3"


@dataclass
class Context:
    """Paths and URLs of the fixtures, filled by the runner before the rows that need them."""

    work: Path
    files: Path = field(init=False)
    """A directory with `notes.txt` and `page.html` (server-filesystem, markitdown)."""
    repo: Path = field(init=False)
    """A git repository with one commit (mcp-server-git)."""
    page_url: str = ""
    pg_socket: Path | None = None
    pg_url: str = ""
    run_id: str = field(default_factory=lambda: time.strftime("%Y%m%d%H%M%S"))
    calls: int = 0
    """Calls built so far (a server that keeps state gets a new entity name per call)."""

    def __post_init__(self) -> None:
        self.files = self.work / "files"
        self.repo = self.work / "repo"


Json = dict[str, Any]


@dataclass(frozen=True)
class Case:
    """One server on one transport.

    Attributes:
        key: Short id (row ids are `<key>-<mode>`).
        server: Display name.
        package: `name@version` (npm) or `name==version` (PyPI), as installed.
        transport: stdio, streamable_http or sse.
        tool / arguments / check: The harmless call and how its text result is judged.
        command: stdio: (command, args) from the context.
        remote: remote: (argv, port, env, URL) of the server process the runner starts.
        env: Plain env of the stdio server; `secret_env` becomes write-only secrets.
        sandbox: The sandboxed row's policy; `sandbox_env` env it needs on top of `env` there;
            `sandbox_note` says why either is not the default.
        reference: A server that needs a cloud account: the row passes when mcp-center's result
            equals what the SDK's own client gets from the same command (`fails identically`).
        fixtures: Which fixtures it needs: page, postgres, files, repo.
    """

    key: str
    server: str
    package: str
    transport: str
    tool: str
    arguments: Callable[[Context], Json]
    check: Callable[[str, Context], bool]
    command: Callable[[Context], tuple[str, list[str]]] | None = None
    remote: Callable[[Context, int], tuple[list[str], Json, str]] | None = None
    env: Callable[[Context], dict[str, str]] = lambda ctx: {}
    secret_env: Mapping[str, str] = field(default_factory=dict[str, str])
    sandbox: Callable[[Context], Json] = lambda ctx: {}
    sandbox_env: Callable[[Context], dict[str, str]] = lambda ctx: {}
    sandbox_note: str = ""
    reference: bool = False
    fixtures: tuple[str, ...] = ()
    startup_timeout_s: float = 180.0
    call_interval_s: float = 0.0
    """Seconds between two calls of one server process (its own rate limit, e.g. brave-search's 1/s)."""
    needs_change: bool = False
    """The default policy is not enough: a third row runs it with the default policy, to show the
    exact reason the change is needed (that row is expected to fail)."""

    @property
    def registry(self) -> str:
        if self.package.startswith("ours"):
            return "ours"
        return "npm" if "@" in self.package.lstrip("@") and "==" not in self.package else "PyPI"


@dataclass(frozen=True)
class Row:
    case: Case
    mode: str  # unconfined, sandboxed, default policy, remote

    @property
    def sandboxed(self) -> bool:
        return self.mode in ("sandboxed", "default policy")

    @property
    def expect_failure(self) -> bool:
        """A sandboxed row with the default policy of a server that needs a change."""
        return self.mode == "default policy"

    @property
    def row_id(self) -> str:
        """`<key>-<stdio|http|sse>-<u|s|d|r>`: the server id the row registers."""
        mode = {"unconfined": "u", "sandboxed": "s", "default policy": "d", "remote": "r"}[self.mode]
        transport = {"stdio": "stdio", "streamable_http": "http", "sse": "sse"}[self.case.transport]
        return f"{self.case.key}-{transport}-{mode}"


def npx(package: str, *args: str) -> Callable[[Context], tuple[str, list[str]]]:
    return lambda ctx: ("npx", ["-y", package, *args])


def uvx(package: str, command: str, *args: str) -> Callable[[Context], tuple[str, list[str]]]:
    return lambda ctx: ("uvx", ["--isolated", "--from", package, command, *args])


def contains(*needles: str) -> Callable[[str, Context], bool]:
    return lambda text, ctx: all(n in text for n in needles)


def everything_remote(mode: str) -> Callable[[Context, int], tuple[list[str], Json, str]]:
    path = "/mcp" if mode == "streamableHttp" else "/sse"

    def build(ctx: Context, port: int) -> tuple[list[str], Json, str]:
        env = {"PORT": str(port), "NODE_OPTIONS": f"--require {LOOPBACK_PRELOAD}"}
        return ["npx", "-y", EVERYTHING, mode], env, f"http://127.0.0.1:{port}{path}"

    return build


def fastmcp_remote(transport: str) -> Callable[[Context, int], tuple[list[str], Json, str]]:
    path = "/mcp" if transport == "http" else "/sse"

    def build(ctx: Context, port: int) -> tuple[list[str], Json, str]:
        argv = ["uvx", "--isolated", "--from", FASTMCP, "python", str(FASTMCP_SERVER), transport, str(port)]
        return argv, {}, f"http://127.0.0.1:{port}{path}"

    return build


def memory_args(ctx: Context) -> Json:
    ctx.calls += 1
    return {"entities": [{"name": entity_name(ctx), "entityType": "test", "observations": ["matrix row"]}]}


def entity_name(ctx: Context) -> str:
    """The entity the latest `create_entities` call created (the direct call and the gateway's differ)."""
    return f"compat-{ctx.run_id}-{ctx.calls}"


def git_safe_directory(ctx: Context) -> dict[str, str]:
    # git refuses a repository owned by another uid ("dubious ownership"): on a root host the
    # sandboxed server runs as its own uid. Trusting that one path is the configuration change.
    return {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "safe.directory", "GIT_CONFIG_VALUE_0": str(ctx.repo)}


_EVERYTHING = Case(
    key="everything",
    server="server-everything",
    package=EVERYTHING,
    transport="stdio",
    command=npx(EVERYTHING, "stdio"),
    tool="echo",
    arguments=lambda ctx: {"message": "compat matrix"},
    check=contains("compat matrix"),
)
_FASTMCP = Case(
    key="fastmcp",
    server="FastMCP server of our own",
    package=f"ours ({FASTMCP})",
    transport="streamable_http",
    remote=fastmcp_remote("http"),
    tool="add",
    arguments=lambda ctx: {"a": 2, "b": 40},
    check=contains("42"),
)

CASES: list[Case] = [
    _EVERYTHING,
    replace(_EVERYTHING, transport="streamable_http", command=None, remote=everything_remote("streamableHttp")),
    replace(_EVERYTHING, transport="sse", command=None, remote=everything_remote("sse")),
    Case(
        key="filesystem",
        server="server-filesystem",
        package=FILESYSTEM,
        transport="stdio",
        command=lambda ctx: ("npx", ["-y", FILESYSTEM, str(ctx.files)]),
        tool="read_text_file",
        arguments=lambda ctx: {"path": str(ctx.files / "notes.txt")},
        check=contains("compat notes"),
        sandbox=lambda ctx: {"paths": [{"path": str(ctx.files)}]},
        sandbox_note="paths: the directory it serves (read-only is enough to read)",
        needs_change=True,
        fixtures=("files",),
    ),
    Case(
        key="memory",
        server="server-memory",
        package=MEMORY,
        transport="stdio",
        command=npx(MEMORY),
        env=lambda ctx: {"MEMORY_FILE_PATH": str(ctx.work / "memory.jsonl")},
        tool="create_entities",
        arguments=memory_args,
        check=lambda text, ctx: entity_name(ctx) in text,
        sandbox_env=lambda ctx: {"MEMORY_FILE_PATH": "/home/mcp/memory.jsonl"},
        sandbox_note="env MEMORY_FILE_PATH in the sandbox's home (the unconfined row's file is not visible)",
    ),
    Case(
        key="thinking",
        server="server-sequential-thinking",
        package=THINKING,
        transport="stdio",
        command=npx(THINKING),
        tool="sequentialthinking",
        arguments=lambda ctx: {
            "thought": "check the matrix",
            "nextThoughtNeeded": False,
            "thoughtNumber": 1,
            "totalThoughts": 1,
        },
        check=contains('"thoughtNumber": 1'),
    ),
    Case(
        key="time",
        server="mcp-server-time",
        package=TIME,
        transport="stdio",
        command=uvx(TIME, "mcp-server-time"),
        tool="get_current_time",
        arguments=lambda ctx: {"timezone": "UTC"},
        check=contains('"timezone": "UTC"'),
    ),
    Case(
        key="fetch",
        server="mcp-server-fetch",
        package=FETCH,
        transport="stdio",
        command=uvx(FETCH, "mcp-server-fetch", "--allow-private-ips"),
        tool="fetch",
        arguments=lambda ctx: {"url": ctx.page_url},
        check=contains("compat page: served from loopback"),
        sandbox=lambda ctx: {"network": "egress"},
        sandbox_note="network egress: fetching URLs is its job (here a page on the host's loopback)",
        needs_change=True,
        fixtures=("page",),
    ),
    Case(
        key="git",
        server="mcp-server-git",
        package=GIT,
        transport="stdio",
        command=lambda ctx: ("uvx", ["--isolated", "--from", GIT, "mcp-server-git", "--repository", str(ctx.repo)]),
        tool="git_log",
        arguments=lambda ctx: {"repo_path": str(ctx.repo), "max_count": 1},
        check=contains("compat: first commit"),
        sandbox=lambda ctx: {"paths": [{"path": str(ctx.repo)}]},
        sandbox_env=git_safe_directory,
        sandbox_note="paths: the repository (read-only); env GIT_CONFIG_* = safe.directory for it: on a "
        "root host the server runs as its own uid and git refuses a repository another uid owns",
        needs_change=True,
        fixtures=("repo",),
    ),
    Case(
        key="postgres",
        server="server-postgres",
        package=POSTGRES,
        transport="stdio",
        command=lambda ctx: ("npx", ["-y", POSTGRES, ctx.pg_url]),
        tool="query",
        arguments=lambda ctx: {"sql": "SELECT name FROM fruit ORDER BY name"},
        check=contains("apple", "banana", "lime"),
        sandbox=lambda ctx: {"paths": [{"path": str(ctx.pg_socket)}]},
        sandbox_note="paths: PostgreSQL's Unix socket directory (network stays none)",
        needs_change=True,
        fixtures=("postgres",),
    ),
    Case(
        key="playwright",
        server="@playwright/mcp + Debian chromium",
        package=PLAYWRIGHT,
        transport="stdio",
        command=npx(
            PLAYWRIGHT,
            "--headless",
            "--browser",
            "chromium",
            "--executable-path",
            "/usr/bin/chromium",
            "--isolated",
            "--no-sandbox",
        ),
        tool="browser_navigate",
        arguments=lambda ctx: {"url": "data:text/html,<h1>compat page</h1>"},
        check=contains("compat page"),
        sandbox_note="the default policy is enough (headless Chromium stays under 256 processes and threads and "
        "4096 MiB); Chromium's own sandbox is off (--no-sandbox): ours confines it",
    ),
    Case(
        key="markitdown",
        server="markitdown-mcp",
        package=MARKITDOWN,
        transport="stdio",
        command=uvx(MARKITDOWN, "markitdown-mcp"),
        tool="convert_to_markdown",
        arguments=lambda ctx: {"uri": (ctx.files / "page.html").as_uri()},
        check=contains("# Compat", "compat page: served from loopback"),
        sandbox=lambda ctx: {"paths": [{"path": str(ctx.files)}]},
        sandbox_note="paths: the directory of the documents it converts",
        needs_change=True,
        fixtures=("files",),
    ),
    _FASTMCP,
    replace(_FASTMCP, transport="sse", remote=fastmcp_remote("sse")),
    Case(
        key="github",
        server="server-github (needs a GitHub account)",
        package=GITHUB,
        transport="stdio",
        command=npx(GITHUB),
        tool="search_repositories",
        arguments=lambda ctx: {"query": "model context protocol"},
        check=lambda text, ctx: True,  # judged against the SDK's own client (reference)
        reference=True,
    ),
    Case(
        key="brave",
        server="server-brave-search (needs a Brave API key)",
        package=BRAVE,
        transport="stdio",
        command=npx(BRAVE),
        secret_env={"BRAVE_API_KEY": "compat-not-a-real-key"},
        call_interval_s=1.5,  # the server allows one call per second and says "Rate limit exceeded" otherwise
        tool="brave_web_search",
        arguments=lambda ctx: {"query": "model context protocol"},
        check=lambda text, ctx: True,
        reference=True,
    ),
]

CI_SUBSET = ("everything-stdio-u", "everything-stdio-s", "everything-sse-r", "time-stdio-s", "fastmcp-http-r")
"""The rows .ci/run checks: npm and PyPI, both stdio modes, both remote transports, our FastMCP."""


def rows(cases: list[Case] | None = None) -> list[Row]:
    """Every row: stdio cases unconfined then sandboxed, remote cases once."""
    out: list[Row] = []
    for case in cases or CASES:
        if case.transport == "stdio":
            out += [Row(case, "unconfined"), Row(case, "sandboxed")]
            if case.needs_change:
                out.append(Row(case, "default policy"))
        else:
            out.append(Row(case, "remote"))
    return out


def result_text(result: Json) -> str:
    """The text of a CallToolResult (text items joined; structured content as JSON)."""
    parts: list[str] = [item.get("text", "") for item in result.get("content", []) if is_object(item)]
    if result.get("structuredContent") is not None:
        parts.append(json.dumps(result["structuredContent"]))
    return "\n".join(parts)


def short(text: str, limit: int = 160) -> str:
    """One line of at most `limit` characters, for the matrix's notes."""
    flat = re.sub(r"\s+", " ", text).strip()
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


if __name__ == "__main__":  # pragma: no cover - a listing for humans
    for row in rows():
        sys.stdout.write(f"{row.row_id}\t{row.case.package}\t{row.mode}\n")
