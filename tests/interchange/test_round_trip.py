"""Export then import of the same servers is a no-op: every entry is `unchanged` (R-1.8, R-1.9, issue 16).

One table of servers with every field a user can set, exported in each format and planned again
over the stored configurations (as `service.imports` does): nothing is created, nothing conflicts.
What a client file cannot carry (`cwd`, tool policies, disabled tools, timeouts, the sandbox,
OAuth settings, secret values) keeps what the server has; see `interchange.plan._differing_fields`.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_center.config import ServerConfig, parse_server_config
from mcp_center.interchange import EXPORT_FORMATS, ImportPlan, export_servers, plan_document, read_document
from mcp_center.service.imports import check_secret_value
from mcp_center.service.records import editable

GATEWAY = "http://127.0.0.1:8765/mcp"

_COMMON: dict[str, Any] = {
    "disabled_tools": ["drop_table"],
    "tool_policies": {"read": "allow", "write": "ask", "rm": "deny"},
    "connect_on_startup": False,
    "call_timeout_s": 120.0,
    "startup_timeout_s": 90.0,
    "max_result_bytes": 4096,
}

STDIO: list[dict[str, Any]] = [
    {"id": "bare", "name": "bare", "transport": "stdio", "command": "uvx"},
    {
        "id": "full",
        "name": "Full Stdio",
        "transport": "stdio",
        "command": "/usr/bin/node",
        "args": ["server.js", "--root", "/srv/data", "--mode=ro"],
        "cwd": "/srv/project",
        "env": {"LOG_LEVEL": "debug", "EMPTY": "", "PLAIN_API_KEY": "shown-as-plain"},
        "secret_env": ["GITHUB_TOKEN", "DB_PASSWORD"],
        "sandbox": {
            "network": "egress",
            "memory_mb": 512,
            "max_processes": 64,
            "max_open_files": 256,
            "paths": [{"path": "/srv/project", "writable": True}],
        },
        **_COMMON,
    },
    {"id": "dollar", "name": "Dollar", "transport": "stdio", "command": "tool", "args": ["${HOME}/x"]},
    # `${` as text that is no reference (no escape in a client file): VARIABLE_INVALID on a new import
    {"id": "literal", "name": "Literal", "transport": "stdio", "command": "t", "args": ["a${", "${x y}", "b${c"]},
    {"id": "literal-env", "name": "Literal Env", "transport": "stdio", "command": "t", "env": {"MODE": "a${"}},
    # `add short -e API_TOKEN=abc --plain API_TOKEN`: shorter than a secret may be (SECRET_VALUE_TOO_SHORT)
    {"id": "short", "name": "short", "transport": "stdio", "command": "t", "env": {"API_TOKEN": "abc"}},
]
REMOTE: list[dict[str, Any]] = [
    {"id": "remote", "name": "remote", "transport": "streamable_http", "url": "https://remote.example.com/mcp"},
    {
        "id": "docs",
        "name": "Docs",
        "transport": "streamable_http",
        "url": "https://docs.example.com/mcp?workspace=acme",
        "headers": {"X-Workspace": "acme", "X-Team": "core"},
        "secret_headers": ["X-Api-Key", "Cookie"],
        "auth": {"kind": "bearer"},
        **_COMMON,
    },
    {
        "id": "oauthed",
        "name": "OAuthed",
        "transport": "streamable_http",
        "url": "https://oauth.example.com/mcp",
        "auth": {"kind": "oauth", "client_id": "abc", "scopes": ["read"], "grant": "authorization_code"},
    },
    {
        "id": "legacy",
        "name": "Legacy SSE",
        "transport": "sse",
        "url": "https://legacy.example.com/sse",
        "headers": {"X-Region": "eu", "X-Plain-Token": "kept-in-plain-text", "X-Template": "${NOT_A_VARIABLE}"},
        "secret_headers": ["X-Secret"],
    },
]
REMOTE.append(  # kept in plain text, as `--plain Authorization` does; the import would make it auth: bearer
    {
        "id": "plain-auth",
        "name": "Plain Auth",
        "transport": "streamable_http",
        "url": "https://plain.example.com/mcp",
        "headers": {"Authorization": "Bearer plain-token-1"},
    }
)
REMOTE.append(  # plain credentials shorter than a secret may be
    {
        "id": "short-remote",
        "name": "Short Remote",
        "transport": "streamable_http",
        "url": "https://short.example.com/mcp",
        "headers": {"Authorization": "Bearer abc", "X-Api-Key": "k1", "X-Lit": "v${"},
    }
)
TWINS: list[dict[str, Any]] = [  # one name, two servers: the export keys them by id
    {"id": "twin", "name": "Twin", "transport": "stdio", "command": "twin", "args": ["one"]},
    {"id": "twin-2", "name": "Twin", "transport": "stdio", "command": "twin", "args": ["two"]},
]


def _configs(format: str) -> list[ServerConfig]:
    bodies = [*STDIO, *TWINS] if format == "claude-desktop" else [*STDIO, *TWINS, *REMOTE]
    return [parse_server_config(body) for body in bodies]


def _plan_export(configs: list[ServerConfig], format: str) -> ImportPlan:
    """Export `configs` in `format` and plan that file against them, as stored (the re-import)."""
    stored = {c.id: {k: v for k, v in editable(c).items() if k != "id"} for c in configs}
    exported = export_servers(configs, format, GATEWAY)
    return plan_document(
        read_document(exported.config, format),
        existing=stored,
        existing_ids=stored,
        on_conflict="refuse",
        check_secret=check_secret_value,
    )


@pytest.mark.parametrize("format", EXPORT_FORMATS)
def test_every_field_of_every_transport_round_trips_as_unchanged(format: str) -> None:
    configs = _configs(format)
    plan = _plan_export(configs, format)
    assert plan.rejected == ()
    assert plan.servers == ()
    assert {e.server_id: (e.outcome, e.fields) for e in plan.existing} == {c.id: ("unchanged", ()) for c in configs}


def _round_trip(bodies: list[dict[str, Any]], format: str) -> tuple[dict[str, tuple[str, tuple[str, ...]]], list[str]]:
    """Export `bodies` in `format`, plan the export over them: outcome per server id, names created."""
    plan = _plan_export([parse_server_config(body) for body in bodies], format)
    assert plan.rejected == ()
    return {e.server_id: (e.outcome, e.fields) for e in plan.existing}, [s.name for s in plan.servers]


def _stdio(sid: str, name: str, arg: str) -> dict[str, Any]:
    return {"id": sid, "name": name, "transport": "stdio", "command": "echo", "args": [arg]}


COLLIDING: dict[str, list[dict[str, Any]]] = {
    # `add a`, `add a`, `add a-2`: a twin's id is another server's name
    "twin id is a name": [_stdio("a", "a", "one"), _stdio("a-2", "a", "two"), _stdio("a-2-2", "a-2", "three")],
    # `add x-2 --id aaa`, `add x`, `add x`: the name comes first, the twin's id after
    "name before twin id": [_stdio("aaa", "x-2", "three"), _stdio("x", "x", "one"), _stdio("x-2", "x", "two")],
    # equal after NFC + strip, distinct on disk
    "NFC and NFD": [_stdio("cafe", "Caf\u00e9", "one"), _stdio("cafe-2", "Cafe\u0301", "two")],
    "trailing space": [_stdio("sp", "sp", "one"), _stdio("sp-2", "sp ", "two")],
    # a twin whose id is a unique name, and a name that looks like the fallback key
    "fallback key taken": [
        _stdio("b", "x", "one"),
        _stdio("b-2", "x", "two"),
        _stdio("z", "b", "three"),
        _stdio("y", "x [b]", "four"),
    ],
    # `<name> [<id>]` is longer than a name may be (100): the key is not a name (NAME_INVALID)
    "long twin name": [_stdio("x", "n" * 98, "one"), _stdio("y", "n" * 98, "two"), _stdio("z", "y", "three")],
    "two twin groups": [
        _stdio("a", "a", "1"),
        _stdio("a-2", "a", "2"),
        _stdio("a-2-2", "a-2", "3"),
        _stdio("a-2-3", "a-2", "4"),
    ],
}


@pytest.mark.parametrize("format", EXPORT_FORMATS)
@pytest.mark.parametrize("case", sorted(COLLIDING))
def test_names_colliding_with_ids_or_each_other_round_trip_as_unchanged(case: str, format: str) -> None:
    bodies = COLLIDING[case]
    outcomes, created = _round_trip(bodies, format)
    assert created == []
    assert outcomes == {b["id"]: ("unchanged", ()) for b in bodies}


_NAMES = st.sampled_from(["a", "a-2", "a-2-2", "x", "x-2", "b", "x [b]", "Caf\u00e9", "Cafe\u0301", "sp", "sp ", "A"])
_IDS = st.sampled_from(["a", "a-2", "a-2-2", "a-2-3", "x", "x-2", "b", "b-2", "aaa", "cafe", "sp", "z"])


@given(
    servers=st.lists(st.tuples(_IDS, _NAMES), min_size=1, max_size=7, unique_by=lambda t: t[0]),
    format=st.sampled_from(EXPORT_FORMATS),
)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_generated_colliding_names_and_ids_round_trip_as_unchanged(servers: list[tuple[str, str]], format: str) -> None:
    bodies = [_stdio(sid, name, f"arg-{i}") for i, (sid, name) in enumerate(servers)]
    outcomes, created = _round_trip(bodies, format)
    assert created == []
    assert outcomes == {b["id"]: ("unchanged", ()) for b in bodies}


def test_a_differing_entry_created_by_rename_is_still_refused_what_the_stored_text_excused() -> None:
    """The waiver is for the server's own stored text; a new server from the file gets every rule (issue 16, F4)."""
    stored = parse_server_config(
        {"id": "short", "name": "short", "transport": "stdio", "command": "t", "env": {"API_TOKEN": "abc"}}
    )
    document = export_servers([stored], "cursor", GATEWAY).config
    document["mcpServers"]["short"]["args"] = ["changed"]
    plan = plan_document(
        read_document(document, "cursor"),
        existing={"short": {k: v for k, v in editable(stored).items() if k != "id"}},
        existing_ids={"short"},
        on_conflict="rename",
        check_secret=check_secret_value,
    )
    assert plan.servers == ()
    assert [(r.name, [e.code for e in r.errors]) for r in plan.rejected] == [("short", ["SECRET_VALUE_TOO_SHORT"])]
