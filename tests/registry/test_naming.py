"""Qualified tool names (R-5.1): valid for LLM providers, deterministic, unique, reversible."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_center.registry import HASH_CHARS, TOOL_NAME_PATTERN, AliasTable, map_characters, tool_prefix
from mcp_center.registry.naming import _hashed_name  # pyright: ignore[reportPrivateUsage]

PROPERTY_SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

SERVER_IDS = st.from_regex(r"\A[a-z0-9](?:[a-z0-9-]{0,30}[a-z0-9])?\Z")
TOOL_NAMES = st.one_of(
    st.text(min_size=1, max_size=120),
    st.text(alphabet="ab._-/ é日", min_size=1, max_size=80),
    st.from_regex(r"\A[A-Za-z0-9_-]{1,70}\Z"),
)

TRICKY = [
    "files.read",
    "files/read",
    "files read",
    "files_read",
    "ファイルを読む",
    "émoji🙂",
    "a" * 100,
    "a" * 99 + "b",
    "x" * 59,
]


def test_a_valid_short_name_is_kept_verbatim() -> None:
    table = AliasTable.build([("everything", "get-sum")])
    alias = table.resolve("mcp__everything__get-sum")
    assert alias is not None
    assert (alias.server_id, alias.tool, alias.verbatim) == ("everything", "get-sum", True)


def test_dots_slashes_spaces_and_unicode_are_mapped_and_get_a_hash_suffix() -> None:
    table = AliasTable.build([("srv", name) for name in TRICKY])
    names = {alias.tool: alias.name for alias in table}
    for tool in ("files.read", "files/read", "files read"):
        assert names[tool].startswith("mcp__srv__files_read_")
        assert len(names[tool].rsplit("_", 1)[1]) == HASH_CHARS
    assert len({names["files.read"], names["files/read"], names["files read"]}) == 3
    assert names["files_read"] == "mcp__srv__files_read"
    assert names["ファイルを読む"].startswith("mcp__srv________")
    assert all(TOOL_NAME_PATTERN.fullmatch(name) for name in names.values())


def test_a_100_character_name_is_shortened_to_64_characters_with_a_hash() -> None:
    table = AliasTable.build([("srv", "a" * 100), ("srv", "a" * 99 + "b")])
    long_names = [alias.name for alias in table]
    assert all(len(name) == 64 for name in long_names)
    assert len(set(long_names)) == 2
    assert all(not alias.verbatim for alias in table)


def test_two_servers_whose_tools_collide_after_mapping_get_distinct_reversible_names() -> None:
    entries = [(server, tool) for server in ("alpha", "beta") for tool in TRICKY]
    table = AliasTable.build(entries)
    assert len(table) == len(entries)
    for server, tool in entries:
        name = table.name_of(server, tool)
        assert name is not None
        alias = table.resolve(name)
        assert alias is not None
        assert (alias.server_id, alias.tool) == (server, tool)


def test_a_mapped_name_never_takes_the_name_of_a_real_tool() -> None:
    """A server naming a tool exactly like the hash result of another tool cannot shadow it."""
    hashed = _hashed_name("srv", "files.read", 0)
    impostor = hashed.removeprefix("mcp__srv__")
    table = AliasTable.build([("srv", "files.read"), ("srv", impostor)])
    impostor_alias = table.resolve(hashed)
    assert impostor_alias is not None
    assert impostor_alias.tool == impostor
    assert impostor_alias.verbatim
    mapped = table.name_of("srv", "files.read")
    assert mapped is not None
    assert mapped != hashed
    assert TOOL_NAME_PATTERN.fullmatch(mapped)


def test_the_same_tools_in_any_order_get_the_same_names() -> None:
    entries = [(server, tool) for server in ("alpha", "beta", "b") for tool in TRICKY]
    first = AliasTable.build(entries).to_dict()
    shuffled = entries[1::2] + entries[::-2]
    assert AliasTable.build(shuffled).to_dict() == first


def test_an_invalid_server_id_is_refused() -> None:
    with pytest.raises(ValueError, match="not a server id"):
        tool_prefix("Bad_Id")


def test_map_characters_replaces_one_for_one() -> None:
    assert map_characters("a.b/c d-e_f") == "a_b_c_d-e_f"


@PROPERTY_SETTINGS
@given(st.lists(st.tuples(SERVER_IDS, TOOL_NAMES), max_size=40))
def test_every_table_is_valid_unique_deterministic_and_reversible(entries: list[tuple[str, str]]) -> None:
    table = AliasTable.build(entries)
    assert len(table) == len(set(entries))
    names = [alias.name for alias in table]
    assert len(set(names)) == len(names)
    for server_id, tool in set(entries):
        name = table.name_of(server_id, tool)
        assert name is not None
        assert TOOL_NAME_PATTERN.fullmatch(name), name
        assert name.startswith(f"mcp__{server_id}__")
        alias = table.resolve(name)
        assert alias is not None
        assert (alias.server_id, alias.tool) == (server_id, tool)
        if TOOL_NAME_PATTERN.fullmatch(f"mcp__{server_id}__{tool}"):
            assert name == f"mcp__{server_id}__{tool}"
    assert AliasTable.build(reversed(entries)).to_dict() == table.to_dict()


@PROPERTY_SETTINGS
@given(SERVER_IDS, st.lists(TOOL_NAMES, min_size=1, max_size=20, unique=True))
def test_tools_that_map_alike_on_two_servers_never_collide(server_id: str, tools: list[str]) -> None:
    other = "alpha" if server_id != "alpha" else "beta"
    collide = [t.replace("_", ".") for t in tools] + [t.replace(".", "_") for t in tools]
    entries = [(sid, t) for sid in (server_id, other) for t in tools + collide]
    table = AliasTable.build(entries)
    assert len({a.name for a in table}) == len(set(entries))
