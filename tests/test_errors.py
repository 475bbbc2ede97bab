"""The error tree drawn in `errors.py`'s docstring lists every error class, its code and its status."""

from __future__ import annotations

import re

import mcp_center.errors as errors_module
from mcp_center.errors import CenterError


def _subclasses(cls: type[CenterError]) -> list[type[CenterError]]:
    """Subclasses defined in `mcp_center.errors` (other modules may refine one and keep its code)."""
    found: list[type[CenterError]] = []
    for sub in cls.__subclasses__():
        found += [sub, *_subclasses(sub)]
    return [c for c in found if c.__module__ == errors_module.__name__]


def test_every_error_class_is_drawn_in_the_tree_with_its_code() -> None:
    doc = errors_module.__doc__ or ""
    for cls in _subclasses(CenterError):
        line = next((ln for ln in doc.splitlines() if re.search(rf"\b{cls.__name__}\b", ln)), None)
        assert line is not None, cls.__name__
        if cls.code != CenterError.code:
            assert cls.code in line, (cls.__name__, cls.code)


def test_codes_are_unique_and_upper_snake_case() -> None:
    codes = [cls.code for cls in _subclasses(CenterError) if cls.code != CenterError.code]
    assert len(codes) == len(set(codes))
    assert all(re.fullmatch(r"[A-Z][A-Z0-9_]+", code) for code in codes)


def test_every_class_is_exported() -> None:
    assert {cls.__name__ for cls in _subclasses(CenterError)} <= set(errors_module.__all__)


def test_the_exit_code_of_an_http_status_comes_from_the_tree() -> None:
    """The CLI exits the same for an error it raised itself and one a running host answered."""
    from mcp_center.cli.host import exit_code_for_status

    table = {401: 6, 403: 5, 404: 3, 409: 4, 413: 2, 422: 2, 502: 7, 503: 9, 504: 8, 500: 1, 418: 1}
    assert {status: exit_code_for_status(status) for status in table} == table


def test_a_not_found_error_clips_the_identifier_it_echoes() -> None:
    """An agent asking for a 1 MB tool name gets a short error, not its input back (R-7.3)."""
    from mcp_center.errors import MAX_ECHOED_CHARS, ToolNotFound

    name = "cap:" + "z" * 1_000_000
    error = ToolNotFound(f"no tool named '{name}'", details={"tool": name, "did_you_mean": ["cap:a"]})
    body = error.to_dict()
    assert len(body["message"]) < 3 * MAX_ECHOED_CHARS
    assert body["message"].startswith("no tool named 'cap:zzz")
    message = "no tool named '" + name + "'"
    assert f"({len(message)} characters)" in body["message"]
    assert len(body["details"]["tool"]) < 2 * MAX_ECHOED_CHARS
    assert body["details"]["did_you_mean"] == ["cap:a"]
    short = ToolNotFound("no tool named 'cap:a'", details={"tool": "cap:a"})
    assert short.to_dict() == {
        "code": "MCP_TOOL_NOT_FOUND",
        "message": "no tool named 'cap:a'",
        "details": {"tool": "cap:a"},
    }


def test_a_name_too_long_to_be_ours_is_not_searched_and_a_long_key_is_echoed_clipped() -> None:
    # A 30,000-character name was matched against every known one and echoed whole (issue 16, R-7.3).
    long = "time" * 7_500
    assert errors_module.did_you_mean(long, ["time", long]) == []
    assert errors_module.did_you_mean("tiem", ["time"]) == ["time"]
    field = errors_module.unknown_field("comand" * 2_000, ["command"]).field
    assert field == errors_module.clip_echo("comand" * 2_000) == ("comand" * 11)[:64] + "… (12000 characters)"
