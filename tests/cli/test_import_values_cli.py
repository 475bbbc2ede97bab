"""`mcp-center import` in a script: `--var NAME=VALUE`, `--var-from-env NAME=ENVVAR`, `--yes` with the
file's defaults, and the dialect a file's name says (R-1.8, R-7.3, issue 16: a new user's CLI trial).

Driven in process (`tests/support/cli.run_cli`); the one test that needs a real pipe (click's hidden
prompt on a non-terminal) runs the installed `mcp-center`.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import CLI, CliResult, run_cli

FIXTURES = Path(__file__).parents[1] / "interchange" / "fixtures"
PROJECT = FIXTURES / "claude_code_project.mcp.json"
"""Variables: GITHUB_PAT (secret), GITHUB_API_URL (default), ORBIT_API_KEY and WIKI_API_KEY (secrets),
NOTES_ROOT (default /srv/notes)."""
PAT, ORBIT, WIKI = "ghp_values_invented_0001", "orbit-values-invented-02", "wiki-values-invented-03"
SECRET_ENV = {"CI_PAT": PAT, "CI_ORBIT": ORBIT, "CI_WIKI": WIKI}
FROM_ENV = ["--var-from-env", "GITHUB_PAT=CI_PAT", "--var-from-env", "ORBIT_API_KEY=CI_ORBIT"]


def run(data: Path, *args: str, input: str | None = None, env: dict[str, str] | None = None) -> CliResult:
    return run_cli(data, *args, input=input, env=env)


def servers(data: Path) -> dict[str, dict[str, Any]]:
    listed = run(data, "list", "--json")
    assert listed.returncode == 0, listed.stderr
    return {s["id"]: s for s in json.loads(listed.stdout)}


def error_lines(result: CliResult) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith("error")]


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return tmp_path / "data"


def test_var_and_var_from_env_give_every_value_and_yes_applies_without_a_question(data: Path) -> None:
    result = run(
        data,
        *["import", str(PROJECT), "--yes", *FROM_ENV, "--var-from-env", "WIKI_API_KEY=CI_WIKI"],
        *["--var", "NOTES_ROOT=/data/notes", "--var", "GITHUB_API_URL=https://ghe.example.com/api/v3"],
        input="",  # nothing to read: a question would end in ANSWER_REQUIRED
        env=SECRET_ENV,
    )
    assert result.returncode == 0, result.stderr
    assert "imported 4 (untrusted, disabled)" in result.stdout
    assert [s for s in (PAT, ORBIT, WIKI) if s in result.stdout + result.stderr] == []
    assert "note:" not in result.stderr  # no secret went through argv
    listed = servers(data)
    assert listed["local-notes"]["args"][-1] == "/data/notes"
    assert listed["github"]["env"] == {"GITHUB_API_URL": "https://ghe.example.com/api/v3"}
    assert listed["github"]["secret_env"] == {"GITHUB_PERSONAL_ACCESS_TOKEN": {"configured": True}}
    assert listed["legacy-wiki"]["secret_headers"] == {"X-Api-Key": {"configured": True}}
    assert [s for s in (PAT, ORBIT, WIKI) if s in (data / "mcp" / "servers.json").read_text()] == []


def test_yes_takes_the_files_defaults_for_the_variables_not_given(data: Path, tmp_path: Path) -> None:
    source = tmp_path / "servers.json"
    source.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "svc": {
                        "command": "mcp-svc",
                        "args": ["--root", "${ROOT:-/srv/root}"],
                        "env": {"API_KEY": "${API_KEY:-default-key-invented}", "MODE": "${MODE}"},
                    }
                }
            }
        )
    )
    result = run(data, "import", str(source), "--yes", "--var", "MODE=fast", input="")
    assert result.returncode == 0, result.stderr
    assert "default-key-invented" not in result.stdout + result.stderr
    [svc] = servers(data).values()
    assert svc["args"] == ["--root", "/srv/root"]
    assert svc["env"] == {"MODE": "fast"}
    assert svc["secret_env"] == {"API_KEY": {"configured": True}}


def test_yes_without_a_value_or_default_is_one_error_line_naming_the_variable(data: Path) -> None:
    result = run(data, "import", str(PROJECT), "--yes", *FROM_ENV, env=SECRET_ENV)
    assert result.returncode == 2, result.stdout
    assert error_lines(result) == [
        "error [IMPORT_VALUES_INVALID]: values.WIKI_API_KEY: needs a value: pass --var NAME=VALUE or, for a "
        "secret, --var-from-env NAME=ENVVAR; nothing changed [VALUE_REQUIRED]"
    ]
    assert result.stderr.count("\n") == 1
    assert [s for s in (PAT, ORBIT) if s in result.stdout + result.stderr] == []
    assert servers(data) == {}


def test_yes_names_every_variable_that_needs_a_value(data: Path) -> None:
    result = run(data, "import", str(PROJECT), "--yes")
    assert result.returncode == 2, result.stdout
    assert "error [IMPORT_VALUES_INVALID]: 3 variables need a value" in result.stderr
    named = [line.split(":")[0].strip(" -") for line in result.stderr.splitlines()[1:]]
    assert named == ["values.GITHUB_PAT", "values.ORBIT_API_KEY", "values.WIKI_API_KEY"]  # the defaults are taken
    assert servers(data) == {}


def test_given_values_are_not_asked_and_the_others_are(data: Path) -> None:
    # Asked: GITHUB_API_URL (Enter: its default), WIKI_API_KEY (hidden); then "Import 4 servers?" yes.
    result = run(
        data, "import", str(PROJECT), *FROM_ENV, "--var", "NOTES_ROOT=/n", input=f"\n{WIKI}\ny\n", env=SECRET_ENV
    )
    assert result.returncode == 0, result.stderr
    table, questions = result.stdout.rsplit("┘\n", 1)
    asked = [line.split(" [")[0] for line in questions.splitlines() if line][:3]
    assert asked == ["GITHUB_API_URL", "WIKI_API_KEY", "Import 4 servers?"]
    variables = table.rsplit("values to supply", 1)[1]
    rows = {line.split("│")[1].strip(): line.split("│")[-2].strip() for line in variables.splitlines() if "│" in line}
    assert rows == {
        "GITHUB_PAT": "$CI_PAT",
        "GITHUB_API_URL": "-",
        "ORBIT_API_KEY": "$CI_ORBIT",
        "WIKI_API_KEY": "-",
        "NOTES_ROOT": "--var",
    }
    assert servers(data)["local-notes"]["args"][-1] == "/n"
    assert [s for s in (PAT, ORBIT, WIKI) if s in result.stdout + result.stderr] == []


def test_a_name_the_file_does_not_use_is_refused_before_anything_is_asked(data: Path) -> None:
    for extra in ([], ["--dry-run"]):
        result = run(data, "import", str(PROJECT), "--var", "GITHUB_PATT=typo-value-invented", *extra, input="")
        assert result.returncode == 2, result.stdout
        [line] = error_lines(result)
        assert line.startswith("error [IMPORT_VALUES_INVALID]: values.GITHUB_PATT: is not a variable of this file")
        assert "(its variables: GITHUB_PAT, GITHUB_API_URL, ORBIT_API_KEY, WIKI_API_KEY, NOTES_ROOT)" in line
        assert line.endswith("[VALUE_UNKNOWN]")
        assert "typo-value-invented" not in result.stdout + result.stderr
    assert servers(data) == {}


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (["--var", "ghp_typed_without_a_name"], "error [REQUEST_INVALID]: --var: #1 is not NAME=VALUE [FIELD_INVALID]"),
        (
            ["--var", "A=1", "--var", "=ghp_no_name"],
            "error [REQUEST_INVALID]: --var: #2 is not NAME=VALUE [FIELD_INVALID]",
        ),
        (
            ["--var", "NOTES_ROOT=/a", "--var-from-env", "NOTES_ROOT=HOME"],
            "error [REQUEST_INVALID]: values.NOTES_ROOT: is given twice: give it once [VALUE_REPEATED]",
        ),
        (
            ["--var-from-env", "GITHUB_PAT=MCP_CENTER_TEST_UNSET_VARIABLE"],
            "error [IMPORT_VALUES_INVALID]: values.GITHUB_PAT: --var-from-env #1 names an environment variable "
            "that is not set here [ENV_VAR_UNSET]",
        ),
        (  # a secret given to --var-from-env instead of --var is not echoed either
            ["--var", "A=1", "--var-from-env", "GITHUB_PAT=ghp_SECRETVAL4"],
            "error [IMPORT_VALUES_INVALID]: values.GITHUB_PAT: --var-from-env #1 names an environment variable "
            "that is not set here [ENV_VAR_UNSET]",
        ),
    ],
    ids=["no-equals", "empty-name", "twice", "unset-env", "secret-as-env"],
)
def test_bad_value_flags_are_refused_before_the_file_is_read(data: Path, flags: list[str], expected: str) -> None:
    """The file does not exist: the flags are refused first, by position when what was typed may be the
    secret itself (never echoed)."""
    result = run(data, "import", str(data / "missing.json"), *flags, input="")
    assert result.returncode == 2, result.stdout
    assert result.stderr.splitlines() == [expected]
    assert "ghp_" not in result.stdout + result.stderr
    assert not data.exists()


def test_a_secret_given_with_var_works_and_says_where_it_went(data: Path, tmp_path: Path) -> None:
    source = tmp_path / "servers.json"
    source.write_text(json.dumps({"mcpServers": {"svc": {"command": "mcp-svc", "env": {"API_KEY": "${API_KEY}"}}}}))
    result = run(data, "import", str(source), "--yes", "--var", "API_KEY=argv-secret-invented")
    assert result.returncode == 0, result.stderr
    assert "note: API_KEY is a secret and --var put it on the command line" in result.stderr
    assert "--var-from-env API_KEY=ENVVAR keeps it off" in result.stderr
    assert "argv-secret-invented" not in result.stdout + result.stderr
    assert servers(data)["svc"]["secret_env"] == {"API_KEY": {"configured": True}}


STDIO_ONLY = {"mcpServers": {"clock": {"command": "uvx", "args": ["mcp-server-time"]}}}


@pytest.mark.parametrize(
    ("path", "document", "reported"),
    [
        (".mcp.json", STDIO_ONLY, "claude-code"),  # was claude-desktop: the shape alone is Desktop's
        ("backup/project.mcp.json", STDIO_ONLY, "claude-code"),
        (".claude.json", STDIO_ONLY, "claude-code"),
        (".cursor/mcp.json", STDIO_ONLY, "cursor"),
        ("windsurf/mcp_config.json", STDIO_ONLY, "windsurf"),
        (
            "claude_desktop_config.json",
            {"mcpServers": {"clock": {"type": "stdio", "command": "uvx"}}},
            "claude-desktop",
        ),
        ("servers.json", STDIO_ONLY, "claude-desktop"),  # a name that says nothing: the shape decides
        ("mcp.json", STDIO_ONLY, "claude-desktop"),  # mcp.json outside .cursor/.vscode says nothing either
        (".mcp.json", {"servers": {"clock": {"command": "uvx"}}}, "vscode"),  # content of another client
        (".vscode/mcp.json", {"servers": {"clock": {"command": "uvx"}}}, "vscode"),
    ],
)
def test_the_format_is_the_one_the_files_name_says_when_its_content_fits(
    data: Path, tmp_path: Path, path: str, document: dict[str, Any], reported: str
) -> None:
    source = tmp_path / path
    source.parent.mkdir(parents=True, exist_ok=True)
    source.write_text(json.dumps(document))
    result = run(data, "import", str(source), "--dry-run")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == f"format: {reported}"


def test_stdin_has_no_name_and_keeps_the_shapes_format(data: Path) -> None:
    result = run(data, "import", "-", "--dry-run", input=json.dumps(STDIO_ONLY))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == "format: claude-desktop"


def test_a_piped_answer_to_a_hidden_question_prints_no_getpass_warning(data: Path, tmp_path: Path) -> None:
    """click hides input with getpass, which on a pipe printed `GetPassWarning: Can not control echo on
    the terminal` before reading the line. A real process with a real pipe (the warning is getpass's)."""
    source = tmp_path / "servers.json"
    source.write_text(json.dumps({"mcpServers": {"svc": {"command": "mcp-svc", "env": {"API_KEY": "${API_KEY}"}}}}))
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_CENTER_")}
    done = subprocess.run(
        [CLI, "import", str(source), "--data-dir", str(data)],
        input="piped-secret-invented-77\ny\n",
        capture_output=True,
        text=True,
        env={**env, "COLUMNS": "200"},
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "Warning" not in done.stderr and done.stderr == "", done.stderr
    assert "API_KEY [secret]: " in done.stdout
    assert "piped-secret-invented-77" not in done.stdout + done.stderr
    assert servers(data)["svc"]["secret_env"] == {"API_KEY": {"configured": True}}


def test_a_refused_value_leads_with_its_error_line_not_the_preview(data: Path) -> None:
    """VALUE_REQUIRED and VALUE_UNKNOWN came after about 25 lines of preview tables, the one line that
    said what to fix at the bottom (issue 16). Now the refusal is all there is: the error line (and
    one line per variable when several need a value), no table (R-7.3)."""
    missing = run(data, "import", str(PROJECT), "--yes", *FROM_ENV, env=SECRET_ENV)
    unknown = run(data, "import", str(PROJECT), "--yes", "--var", "GITHUB_PATT=typo-value-invented", input="")
    several = run(data, "import", str(PROJECT), "--yes", "--json")
    for result in (missing, unknown, several):
        assert result.returncode == 2, result.stdout
        assert (result.stdout, result.stderr.splitlines()[0][:31]) == ("", "error [IMPORT_VALUES_INVALID]: ")
    assert [line[:10] for line in several.stderr.splitlines()[1:]] == ["  - values"] * 3
    assert servers(data) == {}


def test_importing_the_same_file_again_is_safe_and_a_changed_entry_is_refused_unless_told(
    data: Path, tmp_path: Path
) -> None:
    """A second `import` of the same file created `github-2`, `orbit-2`, ... copies of everything
    (issue 16). Now: the same file (the same --var flags included) imports nothing and says so,
    exit 0; a file whose entry differs from the server of its name stops with IMPORT_CONFLICT (exit
    4) naming it and the field, before the preview, nothing applied; `--on-conflict skip` keeps the
    server as it is, `rename` adds a copy of the differing entry only (R-1.8, R-7.3)."""
    flags = [*FROM_ENV, "--var-from-env", "WIKI_API_KEY=CI_WIKI", "--yes"]
    assert run(data, "import", str(PROJECT), *flags, env=SECRET_ENV).returncode == 0
    before = {sid: (s["version"], s["updated_at"]) for sid, s in servers(data).items()}
    again = run(data, "import", str(PROJECT), *flags, env=SECRET_ENV)
    assert again.returncode == 0, again.stderr
    lines = again.stdout.splitlines()
    at = lines.index(
        f"nothing to import into {data} (data directory): 4 already here, unchanged "
        "(github, orbit-tasks, legacy-wiki, local-notes)"
    )
    # Secret values are not compared: the output says the file's were not applied, and how to change them.
    assert [line.split(":")[0] for line in lines[at + 1 :]] == ["github", "orbit-tasks", "legacy-wiki"]
    assert lines[-1] == (
        "legacy-wiki: secret values NOT updated (X-Api-Key): the stored ones stay; to change one: "
        "mcp-center secret set legacy-wiki X-Api-Key --kind header"
    )
    assert {sid: (s["version"], s["updated_at"]) for sid, s in servers(data).items()} == before
    changed = tmp_path / ".mcp.json"
    changed.write_text(PROJECT.read_text().replace("notes-mcp==0.4.2", "notes-mcp==0.5.0"))
    refused = run(data, "import", str(changed), *flags, env=SECRET_ENV)
    assert (refused.returncode, refused.stdout) == (4, "")
    assert refused.stderr.startswith(
        "error [IMPORT_CONFLICT]: 1 entry has the name of an existing server with another definition: "
        "'local-notes' (local-notes: args); nothing applied"
    )
    skipped = run(data, "import", str(changed), *flags, "--on-conflict", "skip", env=SECRET_ENV)
    assert skipped.returncode == 0, skipped.stderr
    assert any(line.endswith("; 1 skipped, differs (local-notes: args)") for line in skipped.stdout.splitlines())
    assert {sid: (s["version"], s["updated_at"]) for sid, s in servers(data).items()} == before
    renamed = run(data, "import", str(changed), *flags, "--on-conflict", "rename", env=SECRET_ENV)
    assert renamed.returncode == 0, renamed.stderr
    assert sorted(servers(data)) == sorted([*before, "local-notes-2"])  # the identical ones skipped
    assert any(
        line.endswith("3 already here, unchanged (github, orbit-tasks, legacy-wiki)")
        for line in renamed.stdout.splitlines()
    )
    bad = run(data, "import", str(changed), "--on-conflict", "replace")
    assert bad.returncode == 2
    assert (
        "error [OPTION_VALUE_INVALID]: option '--on-conflict' of mcp-center import must be one of: refuse, skip, rename"
        in (bad.stderr)
    )
