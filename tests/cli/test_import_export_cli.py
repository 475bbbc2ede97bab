"""`mcp-center import FILE` and `mcp-center export --format ...` (R-1.8, R-1.9).

Driven in process with typer's `CliRunner`, which feeds the prompts (hidden ones too) from `input`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from mcp_center.cli import app
from mcp_center.interchange import MAX_IMPORT_BYTES
from tests.support.cli import run_cli

FIXTURES = Path(__file__).parents[1] / "interchange" / "fixtures"
PROJECT = FIXTURES / "claude_code_project.mcp.json"
SECRETS = ("ghp_cli_invented_0001", "orbit-cli-invented-02", "wiki-cli-invented-03")


def invoke(data_dir: Path, *args: str, input: str | None = None) -> Result:
    env: dict[str, str | None] = {k: None for k in os.environ if k.startswith("MCP_CENTER_")}
    env["COLUMNS"] = "200"
    return CliRunner().invoke(app, [*args, "--data-dir", str(data_dir)], input=input, env=env)


def servers(data_dir: Path) -> list[dict[str, Any]]:
    listed = invoke(data_dir, "list", "--json")
    assert listed.exit_code == 0, listed.output
    result: list[dict[str, Any]] = json.loads(listed.stdout)
    return result


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return tmp_path / "data"


def test_import_shows_the_preview_asks_for_each_value_and_applies(data: Path) -> None:
    # GITHUB_PAT (hidden), GITHUB_API_URL (Enter: the default), ORBIT_API_KEY, WIKI_API_KEY (hidden),
    # NOTES_ROOT (typed), then "Import 4 servers?" yes.
    answers = f"{SECRETS[0]}\n\n{SECRETS[1]}\n{SECRETS[2]}\n/data/notes\ny\n"
    result = invoke(data, "import", str(PROJECT), input=answers)
    assert result.exit_code == 0, result.output
    assert "format: claude-code" in result.stdout
    assert (
        f"imported 4 (untrusted, disabled) into {data} (data directory): github, orbit-tasks, legacy-wiki, local-notes"
        in result.stdout
    )
    assert [s for s in SECRETS if s in result.output] == []
    listed = {s["id"]: s for s in servers(data)}
    assert sorted(listed) == ["github", "legacy-wiki", "local-notes", "orbit-tasks"]
    assert listed["github"]["env"] == {"GITHUB_API_URL": "https://api.github.com"}
    assert listed["github"]["secret_env"] == {"GITHUB_PERSONAL_ACCESS_TOKEN": {"configured": True}}
    assert listed["local-notes"]["args"][-1] == "/data/notes"
    assert all(not s["enabled"] and not s["trusted"] for s in listed.values())
    assert [s for s in SECRETS if s in (data / "mcp" / "servers.json").read_text()] == []


def test_declining_the_confirmation_creates_nothing(data: Path) -> None:
    result = invoke(data, "import", str(FIXTURES / "bare_map.json"), input="n\n")
    assert result.exit_code == 1
    assert servers(data) == []


def test_yes_applies_without_asking_when_no_value_is_needed(data: Path) -> None:
    result = invoke(data, "import", str(FIXTURES / "bare_map.json"), "--yes")
    assert result.exit_code == 0, result.output
    assert [s["id"] for s in servers(data)] == ["docs", "time"]


def test_yes_is_refused_when_a_variable_needs_a_value(data: Path) -> None:
    result = invoke(data, "import", str(PROJECT), "--yes")
    assert result.exit_code == 2
    assert "IMPORT_VALUES_INVALID" in result.stderr
    assert "values.GITHUB_PAT" in result.stderr
    assert "values.GITHUB_API_URL" not in result.stderr  # --yes accepts the file's defaults
    assert servers(data) == []


def test_a_secret_default_is_used_only_after_the_user_accepts_it(data: Path, tmp_path: Path) -> None:
    source = tmp_path / "mcp.json"
    source.write_text(
        json.dumps(
            {"mcpServers": {"svc": {"command": "mcp-svc", "env": {"API_KEY": "${API_KEY:-default-key-invented}"}}}}
        )
    )
    result = invoke(data, "import", str(source), input="\ny\ny\n")
    assert result.exit_code == 0, result.output
    assert "default-key-invented" not in result.output
    assert servers(data)[0]["secret_env"] == {"API_KEY": {"configured": True}}


@pytest.mark.parametrize(
    "answers",
    [
        "",  # the first question (a hidden secret) gets nothing
        f"{SECRETS[0]}\n",  # the second (a value with a default) gets nothing
        f"{SECRETS[0]}\n\n{SECRETS[1]}\n{SECRETS[2]}\n",  # the last plain value gets nothing
    ],
    ids=["secret", "with-default", "plain"],
)
def test_a_value_question_without_an_answer_is_one_error_line_and_imports_nothing(data: Path, answers: str) -> None:
    """A script (standard input at its end) got click's bare "Aborted." for a variable's value. Now:
    ANSWER_REQUIRED, exit 2, one line saying nothing changed, no server created (R-7.3, R-1.8)."""
    result = invoke(data, "import", str(PROJECT), input=answers)
    assert result.exit_code == 2, result.output
    assert "Aborted" not in result.output
    [line] = [line for line in result.stderr.splitlines() if line.startswith("error")]
    assert line.startswith(
        "error [ANSWER_REQUIRED]: no answer (standard input is closed or was interrupted): nothing changed;"
    )
    assert "run import in a terminal" in line
    assert [s for s in SECRETS if s in result.output] == []
    assert servers(data) == []


def test_a_declined_secret_default_without_an_answer_imports_nothing(data: Path, tmp_path: Path) -> None:
    """The yes/no question about a file's secret default, left unanswered, names what to do instead of
    --yes (which import refuses while a variable needs a value) (R-7.3, R-1.8)."""
    source = tmp_path / "mcp.json"
    source.write_text(
        json.dumps(
            {"mcpServers": {"svc": {"command": "mcp-svc", "env": {"API_KEY": "${API_KEY:-default-key-invented}"}}}}
        )
    )
    result = invoke(data, "import", str(source), input="\n")
    assert result.exit_code == 2, result.output
    assert "error [CONFIRMATION_REQUIRED]" in result.stderr
    assert "run import in a terminal" in result.stderr and "--yes" not in result.stderr
    assert servers(data) == []


def test_dry_run_shows_the_preview_and_changes_nothing(data: Path) -> None:
    result = invoke(data, "import", str(FIXTURES / "rejections.json"), "--dry-run")
    assert result.exit_code == 0, result.output
    for code in ("COMMAND_AND_URL", "URL_HAS_CREDENTIALS", "HEADER_RESERVED", "TRANSPORT_MISMATCH"):
        assert code in result.stdout
    assert "pa55word-invented" not in result.output
    assert servers(data) == []


def test_dry_run_json_prints_the_preview_without_its_token(data: Path) -> None:
    result = invoke(data, "import", str(FIXTURES / "cursor.json"), "--dry-run", "--json")
    assert result.exit_code == 0, result.output
    preview = json.loads(result.stdout)
    assert "token" not in preview
    assert [s["id"] for s in preview["servers"]] == ["acme-docs", "playwright", "jira", "repo-tools"]


def test_a_file_with_only_rejected_entries_has_nothing_to_import(data: Path, tmp_path: Path) -> None:
    source = tmp_path / "bad.json"
    source.write_text('{"mcpServers": {"x": {"command": "a", "url": "https://a.example.com/mcp"}}}')
    result = invoke(data, "import", str(source))
    assert result.exit_code == 2
    assert "IMPORT_NOTHING_TO_APPLY" in result.stderr


def test_import_errors_print_their_code(data: Path, tmp_path: Path) -> None:
    invalid = invoke(data, "import", str(FIXTURES / "invalid_missing_comma.json"))
    assert invalid.exit_code == 2
    assert "IMPORT_JSON_INVALID" in invalid.stderr
    big = tmp_path / "big.json"
    big.write_bytes(b" " * (2 * MAX_IMPORT_BYTES))
    too_large = invoke(data, "import", str(big))
    assert too_large.exit_code == 2
    assert "IMPORT_TOO_LARGE" in too_large.stderr
    missing = invoke(data, "import", str(tmp_path / "nope.json"))
    assert missing.exit_code == 3  # not found (ux35): its own code, not REQUEST_INVALID
    assert "IMPORT_FILE_NOT_FOUND" in missing.stderr
    unknown_format = invoke(data, "import", str(PROJECT), "--format", "notepad")
    assert unknown_format.exit_code == 2


def test_a_file_whose_size_stat_does_not_tell_is_still_read_at_most_once_past_the_limit(data: Path) -> None:
    """/dev/zero (or a /proc file, or a file still growing) has no size to trust: the CLI reads at
    most MAX_IMPORT_BYTES + 1 bytes and refuses, instead of reading until memory runs out (R-1.8)."""
    result = invoke(data, "import", "/dev/zero", "--dry-run")
    assert result.exit_code == 2, result.output
    assert "IMPORT_TOO_LARGE" in result.stderr
    assert "1048576" in result.stderr


def test_import_reads_stdin_for_a_dash(data: Path) -> None:
    result = invoke(data, "import", "-", "--yes", input=(FIXTURES / "vscode_settings.json").read_text())
    assert result.exit_code == 0, result.output
    assert [s["id"] for s in servers(data)] == ["memory"]


def test_names_from_the_file_are_never_read_as_markup(data: Path, tmp_path: Path) -> None:
    source = tmp_path / "markup.json"
    source.write_text(json.dumps({"mcpServers": {"[/] [bold]x": {"command": "mcp-x"}}}))
    result = invoke(data, "import", str(source), "--dry-run")
    assert result.exit_code == 0, result.output
    assert "[/] [bold]x" in result.stdout


def test_export_prints_the_client_file_and_lists_placeholders_on_stderr(data: Path) -> None:
    answers = f"{SECRETS[0]}\n\n{SECRETS[1]}\n{SECRETS[2]}\n\ny\n"
    assert invoke(data, "import", str(PROJECT), input=answers).exit_code == 0
    result = invoke(data, "export", "--format", "cursor")
    assert result.exit_code == 0, result.output
    config = json.loads(result.stdout)
    assert sorted(config["mcpServers"]) == ["github", "legacy-wiki", "local-notes", "orbit-tasks"]
    assert config["mcpServers"]["orbit-tasks"]["headers"]["Authorization"] == (
        "Bearer ${env:MCP_CENTER_SECRET_ORBIT_TASKS_BEARER_TOKEN}"
    )
    assert "set MCP_CENTER_SECRET_GITHUB_GITHUB_PERSONAL_ACCESS_TOKEN" in result.stderr
    assert [s for s in SECRETS if s in result.output] == []


def test_export_gateway_prints_the_snippet(data: Path) -> None:
    result = invoke(data, "export", "--format", "claude-code", "--gateway")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {
        "mcpServers": {
            "mcp-center": {
                "type": "http",
                "url": "http://127.0.0.1:8765/mcp",
                "headers": {"Authorization": "Bearer ${MCP_CENTER_GATEWAY_TOKEN}"},
            }
        }
    }


def test_export_of_an_unknown_format_is_refused(data: Path) -> None:
    """As import's --format: OPTION_VALUE_INVALID listing the formats (it was REQUEST_INVALID, fix37)."""
    result = invoke(data, "export", "--format", "cursr")
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        "error [OPTION_VALUE_INVALID]: option '--format' of mcp-center export must be one of: claude-code, cursor, "
        "vscode, claude-desktop; see 'mcp-center export --help'",
        "  did you mean: cursor?",
    ]


def test_an_export_imported_again_is_unchanged(data: Path, tmp_path: Path) -> None:
    """`export` then `import` of the same file is a no-op: a stdio server's `cwd`, which client
    files do not carry, was an IMPORT_CONFLICT on `cwd` (R-1.8, R-1.9, issue 16)."""
    first = tmp_path / "first.json"
    entry = {"command": "notes-mcp", "args": ["--root", "."], "cwd": "/srv/notes", "env": {"LOG_LEVEL": "debug"}}
    first.write_text(json.dumps({"mcpServers": {"notes": entry}}), encoding="utf-8")
    assert invoke(data, "import", str(first), "--yes").exit_code == 0
    before = servers(data)
    exported = invoke(data, "export", "--format", "claude-code")
    assert exported.exit_code == 0, exported.output
    again = tmp_path / ".mcp.json"
    again.write_text(exported.stdout, encoding="utf-8")
    result = invoke(data, "import", str(again), "--yes")
    assert result.exit_code == 0, result.output
    assert f"nothing to import into {data} (data directory): 1 already here, unchanged" in result.stdout
    assert [s["cwd"] for s in servers(data)] == ["/srv/notes"]
    assert [{k: v for k, v in s.items() if k != "status"} for s in servers(data)] == [
        {k: v for k, v in s.items() if k != "status"} for s in before
    ]


def test_a_server_named_twice_in_the_file_is_refused_and_nothing_is_imported(data: Path, tmp_path: Path) -> None:
    """`{"a": {...}, "a": {...}}` kept the last entry and the first server vanished (issue 16)."""
    doubled = tmp_path / "doubled.json"
    doubled.write_text(
        '{"mcpServers": {"a": {"command": "one"}, "b": {"command": "two"}, "a": {"command": "three"}}}',
        encoding="utf-8",
    )
    result = invoke(data, "import", str(doubled), "--yes")
    assert result.exit_code == 2
    assert "IMPORT_DUPLICATE_KEY" in result.stderr
    assert "mcpServers.a" in result.stderr
    assert servers(data) == []


def test_export_says_in_a_sentence_which_file_it_is_for(data: Path) -> None:
    """A bare "for .mcp.json" on stderr read as a cut-off line (issue 16 item 7)."""
    assert run_cli(data, "add", "time", "--", "uvx", "mcp-server-time").returncode == 0
    plain = run_cli(data, "export", "--format", "claude-code")
    assert plain.returncode == 0, plain.stderr
    assert plain.stderr.splitlines() == [
        "the configuration above is for .mcp.json (redirect it there); it holds no secret to fill in"
    ]
    assert run_cli(data, "add", "gh", "-e", "GITHUB_TOKEN=ghp_0123456789abcdef", "--", "npx", "x").returncode == 0
    secret = run_cli(data, "export", "--format", "claude-code")
    assert secret.stderr.splitlines()[0] == (
        "the configuration above is for .mcp.json; the secret values are not exported, set these placeholders:"
    )
    assert secret.stderr.splitlines()[1].startswith("  set ")


def test_export_notes_say_what_was_written_and_what_was_left_out(data: Path) -> None:
    """A note said args.0 'a${b}' was "not exported" while the file held it (issue 16): each note now
    says which it is, the value kept as it is or the field left out."""
    assert run_cli(data, "add", "x", "--", "node", "a${b}").returncode == 0
    assert run_cli(data, "policy", "x", "t", "allow").returncode == 0
    exported = run_cli(data, "export", "--format", "claude-code")
    assert exported.returncode == 0, exported.stderr
    assert json.loads(exported.stdout)["mcpServers"]["x"]["args"] == ["a${b}"]
    assert exported.stderr.splitlines()[1:] == [
        "  x.tool_policies [FIELD_NOT_EXPORTED]: not exported: client files have no tool policies",
        "  x.args.0 [VALUE_EXPANDED_BY_CLIENT]: exported as it is, but holds '${' as text, which the client "
        "expands as a variable (mcp-center does not): the client would use another value; check this field",
    ]


def test_import_names_a_typod_key_and_the_key_it_may_mean(tmp_path: Path) -> None:
    """trial35: `comand` gave ENTRY_EMPTY with no hint; an ignored `argz` showed only its code (R-7.3)."""
    config = tmp_path / "typo.json"
    config.write_text(json.dumps({"mcpServers": {"a": {"comand": "npx"}, "b": {"command": "npx", "argz": ["x"]}}}))
    result = run_cli(tmp_path / "data", "import", str(config), "--dry-run", columns=400)
    assert result.returncode == 0, result.stderr
    assert "ENTRY_EMPTY: entry has neither 'command' nor 'url'; it has 'comand': did you mean 'command'?" in (
        result.stdout
    )
    assert (
        "warning [FIELD_IGNORED] b: 'argz' is not imported (mcp-center has no such setting); did you mean 'args'?"
        in result.stdout.splitlines()
    )


def test_import_of_empty_input_says_it_was_empty(tmp_path: Path) -> None:
    """trial35: nothing on stdin to `import -` said "Expecting value (line 1, column 1)" (R-7.3);
    fix38: with its own code, IMPORT_EMPTY, and the CLI's advice (REST and the page have theirs)."""
    empty = run_cli(tmp_path / "data", "import", "-", input="")
    assert empty.returncode == 2
    assert empty.stderr.startswith(
        "error [IMPORT_EMPTY]: standard input is empty: nothing to import (give a client's configuration file, "
        "or pipe one to 'import -')"
    ), empty.stderr
    blank = tmp_path / "blank.json"
    blank.write_bytes(b"\xef\xbb\xbf  \n")
    blank_run = run_cli(tmp_path / "data", "import", str(blank))
    assert (blank_run.returncode, blank_run.stderr.split(": nothing")[0]) == (
        2,
        f"error [IMPORT_EMPTY]: the file {str(blank)!r} is empty",
    )


def test_import_hints_only_keys_the_entry_does_not_already_have_right(tmp_path: Path) -> None:
    """break36: a typo'd `comand` next to valid `args` and `env` also gave "it has 'args': did you
    mean 'args'?" and the same for 'env'; only the unknown key gets a hint (R-7.3)."""
    config = tmp_path / "b.json"
    config.write_text(json.dumps({"mcpServers": {"x": {"comand": "echo", "args": ["a"], "env": {"T": "v"}}}}))
    result = run_cli(tmp_path / "data", "import", str(config), "--dry-run", columns=400)
    assert result.returncode == 0, result.stderr
    [line] = [line for line in result.stdout.splitlines() if "ENTRY_EMPTY" in line]
    assert line.rstrip(" │").endswith(
        "ENTRY_EMPTY: entry has neither 'command' nor 'url'; it has 'comand': did you mean 'command'?"
    )


def test_the_dry_run_table_shows_a_credential_argument_redacted(tmp_path: Path) -> None:
    """break36: the "target" column printed `echo --token SEKRET456` next to `args.1: CREDENTIAL_IN_ARGS` (R-1.5)."""
    config = tmp_path / "b.json"
    config.write_text(json.dumps({"mcpServers": {"t": {"command": "echo", "args": ["--token", "SEKRET456"]}}}))
    result = run_cli(tmp_path / "data", "import", str(config), "--dry-run", columns=400)
    assert result.returncode == 0, result.stderr
    assert "SEKRET456" not in result.stdout + result.stderr
    assert "echo --token [redacted]" in result.stdout
    assert "args.1: CREDENTIAL_IN_ARGS" in result.stdout


def test_a_misspelled_servers_key_is_named_with_the_key_it_may_mean(data: Path, tmp_path: Path) -> None:
    """fix38: the CLI said only "no MCP servers found" for `{"servers": ...}` spelled `server`."""
    source = tmp_path / "mcp.json"
    source.write_text(json.dumps({"server": {"a": {"command": "x"}}, "inputs": []}), encoding="utf-8")
    result = invoke(data, "import", str(source))
    assert result.exit_code == 2
    assert "IMPORT_FORMAT_UNKNOWN" in result.stderr
    assert "it has 'server': did you mean 'servers'?" in result.stderr
