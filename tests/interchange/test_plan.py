"""The import plan: detection, secrets, variables, ids, resolution with supplied values (R-1.8)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mcp_center.errors import (
    MAX_FIELD_ERRORS,
    ImportFormatMismatch,
    ImportFormatUnknown,
    ImportTooLarge,
    ImportValuesInvalid,
)
from mcp_center.interchange import ImportPlan, plan_document, plan_import, read_document
from tests.support.hang import assert_returns
from tests.support.interchange import check_secret_value


def plan(doc: object, format: str = "auto", existing: tuple[str, ...] = ()) -> ImportPlan:
    return plan_import(json.dumps(doc), format, existing_ids=existing, check_secret=check_secret_value)


def codes(plan_: ImportPlan) -> dict[str, list[str]]:
    return {r.name: [e.code for e in r.errors] for r in plan_.rejected}


@pytest.mark.parametrize(
    ("doc", "format"),
    [
        ({"mcpServers": {"a": {"type": "http", "url": "https://a.example.com/mcp"}}}, "claude-code"),
        ({"projects": {"/p": {"mcpServers": {"a": {"command": "x"}}}}}, "claude-code"),
        ({"mcpServers": {"a": {"command": "x"}}}, "claude-desktop"),
        ({"mcpServers": {"a": {"url": "https://a.example.com/mcp"}}}, "cursor"),
        ({"mcpServers": {"a": {"serverUrl": "https://a.example.com/mcp"}}}, "windsurf"),
        ({"servers": {"a": {"type": "stdio", "command": "x"}}, "inputs": []}, "vscode"),
        ({"mcp": {"servers": {"a": {"command": "x"}}}}, "vscode"),
        ({"a": {"command": "x"}, "b": {"url": "https://b.example.com/mcp"}}, "bare"),
    ],
)
def test_the_dialect_is_detected_from_the_shape(doc: dict[str, Any], format: str) -> None:
    assert plan(doc).format == format


@pytest.mark.parametrize("doc", [[1, 2], "text", {}, {"name": "x", "version": 1}, {"mcpServers": [1]}])
def test_a_file_with_no_servers_shape_is_an_unknown_format(doc: object) -> None:
    with pytest.raises(ImportFormatUnknown) as caught:
        plan(doc)
    assert caught.value.code == "IMPORT_FORMAT_UNKNOWN"


def test_an_explicit_format_that_does_not_match_the_file_is_a_mismatch() -> None:
    with pytest.raises(ImportFormatMismatch) as caught:
        plan({"servers": {"a": {"command": "x"}}}, "cursor")
    assert caught.value.code == "IMPORT_FORMAT_MISMATCH"
    assert caught.value.details["format"] == "cursor"


def test_an_explicit_format_reads_the_file_with_that_name() -> None:
    result = plan({"mcpServers": {"a": {"command": "x"}}}, "cursor")
    assert result.format == "cursor"
    assert [s.id for s in result.servers] == ["a"]


def test_an_empty_server_map_previews_nothing() -> None:
    assert plan({"mcpServers": {}}).preview() == {
        "format": "claude-desktop",
        "servers": [],
        "variables": [],
        "rejected": [],
    }


def test_a_remote_entry_never_becomes_a_command() -> None:
    result = plan(
        {
            "mcpServers": {
                "sse-with-command": {"type": "sse", "command": "node", "args": ["server.js"]},
                "url-and-command": {"command": "node", "serverUrl": "https://a.example.com/mcp"},
                "remote-with-args": {"url": "https://a.example.com/mcp", "args": ["--evil"], "env": {"A": "b"}},
            }
        }
    )
    assert codes(result) == {"sse-with-command": ["TRANSPORT_MISMATCH"], "url-and-command": ["COMMAND_AND_URL"]}
    (server,) = result.servers
    assert server.config["transport"] == "streamable_http"
    assert "command" not in server.config
    assert [(w.field, w.code) for w in server.warnings] == [("args", "FIELD_IGNORED"), ("env", "FIELD_IGNORED")]


def test_url_and_server_url_that_differ_are_ambiguous() -> None:
    result = plan({"mcpServers": {"a": {"url": "https://a.example.com/mcp", "serverUrl": "https://b.example.com/mcp"}}})
    assert codes(result) == {"a": ["URL_AMBIGUOUS"]}


def test_type_and_transport_that_disagree_are_rejected() -> None:
    result = plan({"mcpServers": {"a": {"type": "http", "transport": "sse", "url": "https://a.example.com/mcp"}}})
    assert codes(result) == {"a": ["TRANSPORT_MISMATCH"]}


def test_wrongly_typed_fields_are_rejected_with_their_paths() -> None:
    result = plan(
        {
            "mcpServers": {
                "a": {"command": 7, "args": ["ok", 3], "env": {"A": ["x"]}},
                "b": {"url": "https://b.example.com/mcp", "headers": "X-A: 1"},
                "c": {"type": 5, "command": "x"},
            }
        }
    )
    rejected = {r.name: [(e.field, e.code) for e in r.errors] for r in result.rejected}
    assert rejected == {
        "a": [("command", "FIELD_INVALID"), ("args.1", "FIELD_INVALID"), ("env.A", "FIELD_INVALID")],
        "b": [("headers", "FIELD_INVALID")],
        "c": [("type", "TRANSPORT_UNKNOWN")],
    }


def test_null_env_values_are_dropped_with_a_warning_and_scalars_become_strings() -> None:
    (server,) = plan({"servers": {"a": {"command": "x", "env": {"N": 3.0, "F": 1.5, "B": False, "U": None}}}}).servers
    assert server.config["env"] == {"N": "3", "F": "1.5", "B": "false"}
    assert [(w.field, w.code) for w in server.warnings] == [("env.U", "FIELD_IGNORED")]


def test_a_header_with_a_variable_without_a_default_becomes_a_secret_with_a_secret_input() -> None:
    result = plan({"mcpServers": {"a": {"url": "https://a.example.com/mcp", "headers": {"X-Tenant": "${TENANT}"}}}})
    (server,) = result.servers
    assert server.config["secret_headers"] == ["X-Tenant"]
    assert server.config["headers"] == {}
    assert [(v.name, v.secret) for v in result.variables] == [("TENANT", True)]


@pytest.mark.parametrize(
    ("value", "secret"),
    [
        ("${TEAM:-core}", False),  # the file shows the value; no name looks like a credential
        ("team-${TEAM:-core}-${env:REGION}", True),  # one reference without a default
        ("${TEAM_TOKEN:-abcdefgh}", True),  # the variable's name looks like a credential
        ("${TEAM:-Bearer abcdefgh}", True),  # the default looks like a credential
    ],
)
def test_a_header_variable_with_a_plain_default_is_a_plain_header(value: str, secret: bool) -> None:
    """`X-Team: ${TEAM:-core}` was made a secret, its default hidden, then refused as too short."""
    doc = {"mcpServers": {"a": {"url": "https://a.example.com/mcp", "headers": {"X-Team": value}}}}
    result = plan(doc)
    (server,) = result.servers
    assert (server.config["secret_headers"] == ["X-Team"]) is secret
    assert all(v.secret is secret for v in result.variables if v.name.startswith("TEAM"))
    if not secret:
        assert server.config["headers"] == {"X-Team": value}
        (variable,) = result.preview()["variables"]
        assert (variable["has_default"], variable["default"]) == (True, "core")
        (body,) = result.resolve({}, use_defaults=["TEAM"], check_secret=check_secret_value)
        assert body["headers"] == {"X-Team": "core"}


def test_a_secret_default_too_short_for_a_secret_is_not_offered_and_the_preview_says_why() -> None:
    """`${API_KEY:-dev}` in a secret was offered as a default and refused only at apply (R-1.8)."""
    doc = {
        "mcpServers": {
            "a": {"command": "x", "env": {"API_KEY": "${API_KEY:-dev}", "B_KEY": "${B_KEY:-long-enough}"}},
            "b": {"url": "https://b.example.com/mcp", "headers": {"Authorization": "Bearer ${TOK:-abc}"}},
        }
    }
    result = plan(doc)
    a, b = result.servers
    assert [(w.field, w.code) for w in a.warnings] == [("env.API_KEY", "DEFAULT_UNUSABLE")]
    assert [(w.field, w.code) for w in b.warnings] == [("headers.Authorization", "DEFAULT_UNUSABLE")]
    assert "at least 6 characters" in a.warnings[0].message and "dev" not in a.warnings[0].message
    offered = {v["name"]: v["has_default"] for v in result.preview()["variables"]}
    assert offered == {"API_KEY": False, "B_KEY": True, "TOK": False}
    with pytest.raises(ImportValuesInvalid) as caught:
        result.resolve({"TOK": "t" * 8}, use_defaults=["API_KEY", "B_KEY"], check_secret=check_secret_value)
    assert [(e["field"], e["code"]) for e in caught.value.details["errors"]] == [
        ("use_defaults.API_KEY", "DEFAULT_UNUSABLE")
    ]
    bodies = result.resolve(
        {"API_KEY": "k" * 8, "TOK": "t" * 8}, use_defaults=["B_KEY"], check_secret=check_secret_value
    )
    assert bodies[0]["secret_values"]["env"] == {"API_KEY": "k" * 8, "B_KEY": "long-enough"}


def test_an_env_var_referencing_a_credential_variable_is_secret_whatever_its_name() -> None:
    result = plan({"mcpServers": {"a": {"command": "x", "env": {"GH_AUTH": "${GITHUB_TOKEN}", "MODE": "${MODE}"}}}})
    (server,) = result.servers
    assert server.config["secret_env"] == ["GH_AUTH"]
    assert server.config["env"] == {"MODE": "${MODE}"}
    assert [(v.name, v.secret) for v in result.variables] == [("GITHUB_TOKEN", True), ("MODE", False)]


def test_a_credential_variable_in_args_warns_that_it_will_be_stored_in_plain_text() -> None:
    result = plan({"mcpServers": {"a": {"command": "x", "args": ["--token", "${API_TOKEN}"]}}})
    (server,) = result.servers
    assert [(w.field, w.code) for w in server.warnings] == [("args.1", "SECRET_IN_PLAIN_FIELD")]
    assert [(v.name, v.secret) for v in result.variables] == [("API_TOKEN", True)]


def test_a_url_with_a_password_in_args_warns_that_it_stays_plain_text() -> None:
    """The usual server-postgres setup: args cannot be secrets, so the preview says so (R-1.5)."""
    args = ["-y", "@modelcontextprotocol/server-postgres", "postgres://bob:hunter2@localhost/db"]
    result = plan({"mcpServers": {"pg": {"command": "npx", "args": args}}})
    (server,) = result.servers
    assert [(w.field, w.code) for w in server.warnings] == [
        ("args.2", "CREDENTIAL_IN_ARGS"),
        ("args.1", "PACKAGE_NOT_PINNED"),  # and the package names no version (issue 16)
    ]
    assert all("hunter2" not in w.message for w in server.warnings)


def test_a_token_given_as_an_option_value_in_args_warns_that_it_stays_plain_text() -> None:
    """`--token ghp_...` and `--api-key=...`: found by the option's name; a variable already warned
    about (SECRET_IN_PLAIN_FIELD) is not warned twice (R-1.5)."""
    args = ["--token", "ghp_invented0004", "--api-key=sk-invented-0005", "--secret", "${API_TOKEN}"]
    result = plan({"mcpServers": {"a": {"command": "x", "args": args}}})
    (server,) = result.servers
    assert [(w.field, w.code) for w in server.warnings] == [
        ("args.1", "CREDENTIAL_IN_ARGS"),
        ("args.2", "CREDENTIAL_IN_ARGS"),
        ("args.4", "SECRET_IN_PLAIN_FIELD"),
    ]


def test_a_non_bearer_authorization_becomes_a_secret_header_and_two_authorizations_are_rejected() -> None:
    result = plan(
        {
            "mcpServers": {
                "basic": {"url": "https://a.example.com/mcp", "headers": {"Authorization": "Basic dXNlcjpwdw=="}},
                "raw": {"url": "https://a.example.com/mcp", "headers": {"Authorization": "${RAW_AUTH}"}},
                "twice": {
                    "url": "https://a.example.com/mcp",
                    "headers": {"Authorization": "Bearer aaaaaaaa", "authorization": "Bearer bbbbbbbb"},
                },
            }
        }
    )
    assert [(s.id, s.config["auth"], s.config["secret_headers"]) for s in result.servers] == [
        ("basic", {"kind": "none"}, ["Authorization"]),
        ("raw", {"kind": "none"}, ["Authorization"]),
    ]
    assert codes(result) == {"twice": ["HEADER_DUPLICATE"]}


def test_a_secret_default_is_offered_but_never_shown() -> None:
    result = plan({"mcpServers": {"a": {"command": "x", "env": {"API_KEY": "${API_KEY:-sk-default-invented}"}}}})
    (variable,) = result.preview()["variables"]
    assert (variable["secret"], variable["has_default"], variable["default"]) == (True, True, None)
    assert "sk-default-invented" not in json.dumps(result.preview())


def test_different_defaults_for_one_variable_offer_no_default() -> None:
    result = plan(
        {"mcpServers": {"a": {"command": "x", "args": ["${PORT:-1}"]}, "b": {"command": "y", "args": ["${PORT:-2}"]}}}
    )
    (variable,) = result.variables
    assert (variable.has_default, variable.default) == (False, None)
    assert variable.used_in == (("a", "args.0"), ("b", "args.0"))


def test_ids_of_names_that_slugify_the_same_get_suffixes_within_32_characters() -> None:
    long_name = "a" * 40
    result = plan(
        {"mcpServers": {long_name: {"command": "x"}, long_name.upper(): {"command": "y"}, "???": {"command": "z"}}}
    )
    assert [(s.id, s.clash) for s in result.servers] == [("a" * 32, None), ("a" * 30 + "-2", "file"), ("server", None)]


def test_rejected_entries_do_not_take_an_id() -> None:
    result = plan(
        {
            "mcpServers": {
                "docs": {"url": "http://docs.example.com/mcp"},
                "Docs": {"url": "https://docs.example.com/mcp"},
            }
        }
    )
    assert [(s.id, s.clash) for s in result.servers] == [("docs", None)]


# ----- resolve ------------------------------------------------------------------------------


def github_plan() -> ImportPlan:
    return plan(
        {
            "mcpServers": {
                "github": {
                    "command": "npx",
                    "args": ["-y", "server-github@1.0.0", "--api", "${API_URL:-https://api.github.com}"],
                    "env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}", "LOG": "${LOG:-info}"},
                },
                "docs": {
                    "type": "http",
                    "url": "https://${DOCS_HOST}/mcp",
                    "headers": {"Authorization": "Bearer ${DOCS_TOKEN}"},
                },
            }
        }
    )


def test_resolve_fills_supplied_values_and_accepted_defaults_into_create_bodies() -> None:
    bodies = github_plan().resolve(
        {
            "GITHUB_TOKEN": "ghp_invented_123",
            "DOCS_HOST": "docs.example.com",
            "DOCS_TOKEN": "docs-invented-456",
            "LOG": "debug",
        },
        ["API_URL", "LOG"],
        check_secret_value,
    )
    assert bodies == [
        {
            "id": "github",
            "name": "github",
            "transport": "stdio",
            "command": "npx",
            "args": ["-y", "server-github@1.0.0", "--api", "https://api.github.com"],
            "cwd": None,
            "env": {"LOG": "debug"},
            "secret_env": ["GITHUB_TOKEN"],
            "secret_values": {"env": {"GITHUB_TOKEN": "ghp_invented_123"}},
        },
        {
            "id": "docs",
            "name": "docs",
            "transport": "streamable_http",
            "url": "https://docs.example.com/mcp",
            "headers": {},
            "secret_headers": [],
            "auth": {"kind": "bearer"},
            "secret_values": {"bearer_token": "docs-invented-456"},
        },
    ]


def test_resolve_lists_every_missing_unknown_and_undefaultable_value() -> None:
    with pytest.raises(ImportValuesInvalid) as caught:
        github_plan().resolve({"NOPE": "x", "LOG": 5}, ["GITHUB_TOKEN", "ALSO_NOPE"], check_secret_value)
    assert caught.value.code == "IMPORT_VALUES_INVALID"
    assert [(e["field"], e["code"]) for e in caught.value.details["errors"]] == [
        ("values.NOPE", "VALUE_UNKNOWN"),
        ("values.LOG", "VALUE_INVALID"),
        ("use_defaults.GITHUB_TOKEN", "DEFAULT_MISSING"),
        ("use_defaults.ALSO_NOPE", "VALUE_UNKNOWN"),
        ("values.API_URL", "VALUE_REQUIRED"),
        ("values.DOCS_HOST", "VALUE_REQUIRED"),
        ("values.DOCS_TOKEN", "VALUE_REQUIRED"),
    ]


def test_resolve_lists_at_most_max_field_errors_and_counts_the_rest() -> None:
    """Thousands of unknown values are refused with `MAX_FIELD_ERRORS` of them listed and the rest
    counted, not a listing as long as the caller's body (R-1.8, R-7.3, issue 16)."""
    with pytest.raises(ImportValuesInvalid) as without_values:
        github_plan().resolve({}, [], check_secret_value)
    required = len(without_values.value.details["errors"])  # the plan's variables without a default
    assert 0 < required < MAX_FIELD_ERRORS
    with pytest.raises(ImportValuesInvalid) as caught:
        github_plan().resolve({f"NOPE_{i}": "x" for i in range(3000)}, [], check_secret_value)
    details = caught.value.details
    assert [(e["field"], e["code"]) for e in details["errors"][:2]] == [
        ("values.NOPE_0", "VALUE_UNKNOWN"),
        ("values.NOPE_1", "VALUE_UNKNOWN"),
    ]
    assert len(details["errors"]) == MAX_FIELD_ERRORS
    assert details["errors_omitted"] == 3000 + required - MAX_FIELD_ERRORS
    assert caught.value.message.startswith("values.NOPE_0: ")
    assert caught.value.message.endswith(f"(and {3000 + required - 1} more)")


def test_resolve_checks_the_resolved_servers_against_r1_and_names_the_server() -> None:
    with pytest.raises(ImportValuesInvalid) as caught:
        github_plan().resolve(
            {"GITHUB_TOKEN": "Zq9x", "DOCS_HOST": "user:pw@docs.example.com", "DOCS_TOKEN": "docs-invented-456"},
            ["API_URL", "LOG"],
            check_secret_value,
        )
    assert [(e["field"], e["code"]) for e in caught.value.details["errors"]] == [
        ("servers.github.env.GITHUB_TOKEN", "SECRET_VALUE_TOO_SHORT"),
        ("servers.docs.url", "URL_HAS_CREDENTIALS"),
    ]
    assert "Zq9x" not in caught.value.message + json.dumps(caught.value.details)
    assert "pw@" not in json.dumps(caught.value.details)


def test_a_credential_pattern_in_a_url_template_is_rejected_at_preview() -> None:
    result = plan({"mcpServers": {"a": {"url": "https://${USER}:${PASS}@a.example.com/mcp"}}})
    assert codes(result) == {"a": ["URL_HAS_CREDENTIALS"]}


def test_a_variable_never_resolves_from_the_host_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLANTED_HOST_SECRET", "host-value-must-not-leak")
    result = plan(
        {"mcpServers": {"a": {"command": "x", "args": ["${PLANTED_HOST_SECRET}", "${env:PLANTED_HOST_SECRET}"]}}}
    )
    assert "host-value-must-not-leak" not in json.dumps(result.preview())
    with pytest.raises(ImportValuesInvalid):
        result.resolve({}, (), check_secret_value)
    (body,) = result.resolve({"PLANTED_HOST_SECRET": "supplied"}, (), check_secret_value)
    assert body["args"] == ["supplied", "supplied"]


# ----- limits -------------------------------------------------------------------------------


def test_five_hundred_entries_preview_with_one_variable_each_and_a_shared_token() -> None:
    """A large file previews whole (speed is not measured here: speed goals belong to benchmarks)."""
    servers: dict[str, Any] = {}
    for i in range(250):
        servers[f"local-{i}"] = {
            "command": "npx",
            "args": ["-y", f"server-{i}@1.0.{i}"],
            "env": {"API_KEY": "${API_KEY_" + str(i) + "}", "LOG_LEVEL": "info"},
        }
        servers[f"remote-{i}"] = {
            "type": "http",
            "url": f"https://r{i}.example.com/mcp",
            "headers": {"Authorization": "Bearer ${TOKEN}"},
        }
    text = json.dumps({"mcpServers": servers}, indent=2)
    preview = plan_import(text, check_secret=check_secret_value).preview()
    assert len(preview["servers"]) == 500
    assert preview["rejected"] == []
    assert len(preview["variables"]) == 251


def test_a_five_megabyte_file_is_refused_with_the_limit_before_parsing() -> None:
    entry = {"command": "npx", "args": ["-y", "pkg@1.0.0"], "env": {"PADDING": "x" * 1000}}
    text = json.dumps({"mcpServers": {f"s{i}": entry for i in range(5000)}})
    assert len(text) > 5_000_000
    with pytest.raises(ImportTooLarge) as caught:
        plan_import(text)
    assert caught.value.code == "IMPORT_TOO_LARGE"
    assert caught.value.details["limit_bytes"] == 1024 * 1024
    assert caught.value.details["size_bytes"] == len(text)


def _an_import_of_long_plain_values_is_planned() -> None:
    env = {f"E{i}": letter * 16 * 1024 for i, letter in enumerate("abcdefgh")}
    result = plan({"mcpServers": {"x": {"command": "npx", "args": ["a" * 900_000], "env": env}}})
    assert codes(result) == {"x": ["ARGS_INVALID"]}


def test_an_import_with_a_900_kb_argument_is_planned_without_hanging() -> None:
    """Hang check, not a speed goal (R-7.3): the credential check on arguments and env values ran
    before the length checks and took over 5 minutes on `"a" * 900_000`, freezing `serve`. Fails
    only if the plan has not returned after `HANG_BOUND_S` seconds."""
    assert_returns(_an_import_of_long_plain_values_is_planned)


@pytest.mark.parametrize(
    "inputs",
    [
        [{"id": "k", "type": "promptString", "password": "yes"}],
        [{"id": "k", "type": "promptString", "password": 1}],
        [{"id": "k", "type": "promptString"}, {"id": "k", "type": "promptString", "password": True}],
        [{"id": "k", "type": "promptString", "password": True}, {"id": "k", "type": "promptString"}],
    ],
)
def test_an_input_that_may_be_a_password_is_asked_for_hidden_and_stored_as_a_secret(inputs: list[object]) -> None:
    """A malformed `password` ("yes", 1) or an id declared twice, once as a password: we err towards
    secret (R-1.5), as for names; only an input that never says password is plain."""
    doc = {"servers": {"a": {"type": "stdio", "command": "x", "env": {"K": "${input:k}"}}}, "inputs": inputs}
    result = plan(doc)
    assert [(v.name, v.secret) for v in result.variables] == [("input:k", True)]
    (server,) = result.servers
    assert [s.key for s in server.secrets] == ["K"]


def test_an_input_declared_plain_stays_plain() -> None:
    doc = {
        "servers": {"a": {"type": "stdio", "command": "x", "env": {"K": "${input:k}"}}},
        "inputs": [{"id": "k", "type": "promptString", "password": False}],
    }
    assert [(v.name, v.secret) for v in plan(doc).variables] == [("input:k", False)]


def _fourteen_variables_in_a_url_against_an_existing_long_url() -> None:
    url = "".join(f"${{V{i}}}" for i in range(14)) + "/zz"
    document = read_document({"mcpServers": {"docs": {"url": url}}}, "auto")
    stored = {"name": "docs", "transport": "http", "url": "https://docs.example.com/" + "a" * 30_000 + "/z"}
    found = plan_document(document, existing={"docs": stored}, on_conflict="refuse")
    [entry] = found.existing
    assert (entry.server_id, entry.outcome, "url" in entry.fields) == ("docs", "conflict", True)


def test_a_reimported_entry_with_many_variables_is_compared_at_once() -> None:
    """A hang check (R-7.3): as a `.*` regex, this preview froze the whole serve process."""
    assert_returns(_fourteen_variables_in_a_url_against_an_existing_long_url)


def reimport(doc: object, existing: dict[str, dict[str, Any]] | None = None, on_conflict: str = "refuse") -> ImportPlan:
    """Plan `doc` again over the servers a first import of `existing` (default: `doc`) created."""
    first = plan(doc if existing is None else existing)
    stored = {s.id: {k: v for k, v in s.config.items() if k != "id"} for s in first.servers}
    document = read_document(doc, "auto")
    return plan_document(document, existing=stored, on_conflict=on_conflict, check_secret=check_secret_value)


def outcomes(plan_: ImportPlan) -> dict[str, tuple[str, str]]:
    return {e.name: (e.server_id, e.outcome) for e in plan_.existing}


def test_an_entry_is_matched_to_the_server_with_its_exact_name_before_a_casefolded_one() -> None:
    """`time` and `Time` were imported as time and time-2; the casefold map kept the last one, so
    both were matched to time-2 and `time` was a false IMPORT_CONFLICT."""
    doc = {
        "mcpServers": {
            "time": {"command": "uvx", "args": ["mcp-server-time"]},
            "Time": {"command": "uvx", "args": ["mcp-server-time", "--local-timezone=UTC"]},
        }
    }
    assert [s.id for s in plan(doc).servers] == ["time", "time-2"]
    again = reimport(doc)
    assert (again.servers, outcomes(again)) == ((), {"time": ("time", "unchanged"), "Time": ("time-2", "unchanged")})
    folded = reimport({"mcpServers": {"TIME": {"command": "uvx", "args": ["mcp-server-time"]}}}, doc)
    # no exact name: the first casefolded one, whose name differs
    assert [(e.server_id, e.outcome, e.fields) for e in folded.existing] == [("time", "conflict", ("name",))]


def test_names_are_matched_after_unicode_normalization() -> None:
    """NFD `Cafe\u0301` is the server NFC `Café` (the same text, unchanged); full-width `CAFE`
    matches `cafe` once NFKC-normalized and casefolded (a conflict on the name, not a copy)."""
    command = {"command": "uvx", "args": ["cafe-mcp"]}
    stored = {"mcpServers": {"Café": command, "cafe": command}}
    again = reimport({"mcpServers": {"Cafe\u0301": command}}, stored)
    assert (again.servers, outcomes(again)) == ((), {"Cafe\u0301": ("cafe", "unchanged")})
    wide = reimport({"mcpServers": {"\uff23\uff21\uff26\uff25": command}}, {"mcpServers": {"cafe": command}})
    assert [(e.server_id, e.outcome, e.fields) for e in wide.existing] == [("cafe", "conflict", ("name",))]


def test_an_entry_whose_id_alone_is_taken_is_a_new_server_with_a_suffixed_id() -> None:
    """`GitHub!` derives the id `github` that the server named `github` has, but it is another name:
    it is created as github-2 (as a first import would), neither refused nor skipped."""
    command = {"command": "npx", "args": ["@modelcontextprotocol/server-github"]}
    stored = {"mcpServers": {"github": command}}
    for on_conflict in ("refuse", "skip"):
        again = reimport({"mcpServers": {"GitHub!": command}}, stored, on_conflict)
        assert again.existing == ()
        assert [(s.id, s.name, s.clash, s.slug) for s in again.servers] == [
            ("github-2", "GitHub!", "existing", "github")
        ]


def test_rename_copies_a_differing_entry_and_skips_an_identical_one() -> None:
    """The CLI help and the page say identical entries are skipped; `rename` copied them too."""
    stored = {"mcpServers": {"time": {"command": "uvx", "args": ["mcp-server-time"]}, "notes": {"command": "notes"}}}
    changed = {"mcpServers": {"time": {"command": "uvx", "args": ["mcp-server-time"]}, "notes": {"command": "notes2"}}}
    again = reimport(changed, stored, "rename")
    assert outcomes(again) == {"time": ("time", "unchanged")}
    assert [(s.id, s.name, s.clash) for s in again.servers] == [("notes-2", "notes", "existing")]


def test_an_unchanged_entry_lists_the_secrets_whose_values_were_not_updated() -> None:
    """Secret values are write-only and never compared: the preview names the ones the file gives
    (literal or `${...}`) so the CLI and the page can say they were NOT updated."""
    entry = {"command": "uvx", "args": ["wiki"], "env": {"WIKI_TOKEN": "${WIKI_TOKEN}", "EMPTY_KEY": "", "MODE": "ro"}}
    remote = {"url": "https://wiki.example.com/mcp", "headers": {"Authorization": "Bearer abcdef123456"}}
    doc = {"mcpServers": {"wiki": entry, "remote": remote, "plain": {"command": "plain"}}}
    again = reimport(doc)
    kept = {e.server_id: e.preview()["secrets_not_updated"] for e in again.existing}
    assert kept == {
        "wiki": [{"kind": "env", "key": "WIKI_TOKEN"}],  # EMPTY_KEY gives no value: nothing to update
        "remote": [{"kind": "bearer", "key": "token"}],
        "plain": [],
    }
    assert {e.outcome for e in again.existing} == {"unchanged"}


@pytest.mark.parametrize(
    ("doc", "format", "path", "meant"),
    [
        ({"mcpServer": {"a": {"command": "x"}}}, "auto", "mcpServer", "mcpServers"),
        ({"MCPServers": {"a": {"command": "x"}}}, "auto", "MCPServers", "mcpServers"),
        ({"mcp_servers": {"a": {"command": "x"}}}, "claude-desktop", "mcp_servers", "mcpServers"),
        ({"server": {"a": {"command": "x"}}, "inputs": []}, "auto", "server", "servers"),
        ({"servers_": {"a": {"command": "x"}}}, "vscode", "servers_", "servers"),
        ({"mcp": {"sever": {"a": {"command": "x"}}}}, "auto", "mcp.sever", "servers"),
        ({"project": {"/p": {"mcpServers": {"a": {"command": "x"}}}}}, "auto", "project", "projects"),
    ],
)
def test_a_misspelled_servers_key_is_named_with_the_key_it_may_mean(
    doc: dict[str, Any], format: str, path: str, meant: str
) -> None:
    """fix38: a typo'd key above the entries (`mcpServer`, `server`, `project`) answered only "no MCP
    servers found"; it is named with the key it may mean, like a typo'd entry key (R-7.3)."""
    with pytest.raises((ImportFormatUnknown, ImportFormatMismatch)) as raised:
        plan(doc, format)
    assert raised.value.message.endswith(f"; it has '{path}': did you mean '{meant}'?")
    assert (raised.value.details["did_you_mean"], raised.value.details["misspelled"]) == ([meant], [path])


@pytest.mark.parametrize(
    ("doc", "source", "meant"),
    [
        ({"servers": {"a": {"command": "x"}}, "input": [{"id": "t", "password": True}]}, "input", "inputs"),
        ({"mcp": {"servers": {"a": {"command": "x"}}, "imputs": []}}, "mcp.imputs", "inputs"),
        ({"mcpServers": {"a": {"command": "x"}}, "project": {"/p": {"mcpServers": {}}}}, "project", "projects"),
        (
            {"mcpServers": {"a": {"command": "x"}}, "projects": {"/p": {"mcpservers": {"b": {"command": "y"}}}}},
            'projects["/p"].mcpservers',
            "mcpServers",
        ),
    ],
)
def test_a_misspelled_key_beside_the_servers_is_rejected_with_the_key_it_may_mean(
    doc: dict[str, Any], source: str, meant: str
) -> None:
    """fix38: with the servers found, a misspelled `inputs` or `projects` was skipped without a word
    (its servers, or the inputs' password flags, lost); the preview lists it as rejected."""
    planned = plan(doc)
    assert [s.id for s in planned.servers] == ["a"]
    [rejected] = planned.rejected
    assert (rejected.source, [e.code for e in rejected.errors]) == (source, ["KEY_MISSPELLED"])
    assert f"did you mean '{meant}'?" in rejected.errors[0].message


def test_other_settings_of_a_claude_json_are_not_taken_for_typos() -> None:
    """Only a key close to a container key its object lacks is flagged: `~/.claude.json`'s own
    settings (`enabledMcpjsonServers` beside `mcpServers`, `numStartups`) are not."""
    doc: dict[str, Any] = {
        "numStartups": 3,
        "mcpServers": {"a": {"command": "x"}},
        "projects": {"/p": {"mcpServers": {}, "enabledMcpjsonServers": [], "mcpContextUris": []}},
    }
    assert plan(doc).rejected == ()
