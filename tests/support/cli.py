"""The `mcp-center` CLI driven in process with typer's `CliRunner` (issue 16: one process per verb was
38% of the non-browser suite's time).

`run_cli` answers what a finished process would (`returncode`, `stdout`, `stderr`), so a test reads
the same whichever way the verb ran. What a real process has of its own, and an in-process run must
not leak or inherit, is handled here:

- environment: `MCP_CENTER_*` of the test process are removed for the run, `COLUMNS` and the given
  variables set; `CliRunner` puts `os.environ` back afterwards.
- terminal width: the CLI's rich consoles are module globals that may have fixed their width at
  import; each run sets the width it asks for and restores the previous one.
- logging: a verb may call `logging.basicConfig` (the stdio bridge) with the runner's temporary
  stderr; the root logger's handlers and level are restored so no later record goes to a closed stream.
- crashes: an exception other than an exit is raised again (a process would print a traceback and
  exit 1; a test must not mistake that for an intended exit code 1).
- the command: typer builds the click command from `cli.app` (every command's signature and type
  hints read again, ~17 ms) on each `CliRunner.invoke`; it is built once per process here and run
  as `main()` runs it. A click command holds no state of a run (issue 16: ~300 runs in tests/cli).
- event loops: verbs call `anyio.run`, so `run_cli` must be called where no loop runs (a sync test,
  or `anyio.to_thread.run_sync` from an async one).

Tests about processes (signals, `serve`'s lifecycle, stdin bridges of a real process, the console
script itself) spawn the real `mcp-center` instead: `CLI` is its path. A test that needs another
process only as another writer of the data directory (or a bridge's own process), not its start,
uses `run_cli_process`: forked by the worker's fork server (tests/support/zygote.py), it skips the
~1 s of CPU a fresh interpreter spends importing the CLI (issue 16).
"""

from __future__ import annotations

import functools
import logging
import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import typer.main
from rich.console import Console
from typer.core import TyperGroup
from typer.testing import CliRunner, Result

from mcp_center import cli
from tests.support.serve import VENV_BIN
from tests.support.zygote import fork_enabled, zygote

__all__ = ["CLI", "CliResult", "ready_with_cli", "run_cli", "run_cli_process"]

CLI = str(VENV_BIN / "mcp-center")
"""The console script installed in the venv, for the tests that need a real process."""


@dataclass(frozen=True)
class CliResult:
    """What a finished `mcp-center` run gave: its exit code and its two output streams (text)."""

    returncode: int
    stdout: str
    stderr: str


def run_cli(
    data_dir: Path | None,
    *args: str,
    input: str | None = None,
    columns: int = 200,
    env: Mapping[str, str] | None = None,
) -> CliResult:
    """Run `mcp-center ARGS` in this process with `MCP_CENTER_DATA_DIR=data_dir` (unless None).

    Args:
        data_dir: The data directory, passed as the environment variable a user would set.
        input: What the verb reads on stdin (prompts, hidden ones too, and `secret set` values).
        columns: The terminal width the CLI formats for (characters).
        env: More environment variables (e.g. `MCP_CENTER_ADMIN_TOKEN`).
    Returns:
        The exit code (0 when the verb returned normally) and what it printed on stdout and stderr.
    Raises:
        Exception: whatever the verb raised other than an exit (a crash, not an exit code).
    """
    run_env: dict[str, str | None] = {name: None for name in os.environ if name.startswith("MCP_CENTER_")}
    run_env["COLUMNS"] = str(columns)
    if data_dir is not None:
        run_env["MCP_CENTER_DATA_DIR"] = str(data_dir)
    run_env.update(env or {})
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    consoles = (cli.out, cli.err)
    widths = [_fixed_width(console) for console in consoles]
    for console in consoles:
        console.width = columns
    try:
        result = _invoke(list(args), input, run_env)
    finally:
        for console, width in zip(consoles, widths, strict=True):
            console._width = width  # pyright: ignore[reportPrivateUsage] - rich has no public "unset"
        root.handlers[:] = handlers
        root.setLevel(level)
    return CliResult(result.exit_code, result.stdout, result.stderr)


@functools.cache
def _command() -> TyperGroup:
    """The click command `cli.app` makes (what `main()` runs), built once per process."""
    command = typer.main.get_command(cli.app)
    assert isinstance(command, TyperGroup), command
    return command


def _invoke(args: list[str], input: str | None, env: Mapping[str, str | None]) -> Result:
    """What typer's `CliRunner().invoke(cli.app, args, input=input, env=env)` does, with the command
    built once (`_command`); an exception other than an exit is raised, not kept in the result."""
    runner = CliRunner()
    command = _command()
    with runner.isolation(input=input, env=env) as (out, err, mixed):
        try:
            command.main(args=args, prog_name=runner.get_default_prog_name(command))
            code = 0
        except SystemExit as exc:
            if exc.code is None or isinstance(exc.code, int):
                code = exc.code or 0
            else:  # as CliRunner: an exit with a message prints it and exits 1
                sys.stdout.write(f"{exc.code}\n")
                code = 1
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
        stdout, stderr, output = out.getvalue(), err.getvalue(), mixed.getvalue()
    return Result(runner, stdout, stderr, output, None, code, None)


def run_cli_process(*args: str, env: Mapping[str, str], input: bytes = b"", timeout_s: float = 60.0) -> CliResult:
    """Run `mcp-center ARGS` as another process with exactly `env`, and wait for it to end (blocking:
    from an async test, call it through `anyio.to_thread.run_sync`).

    The process is forked by this worker's fork server (`zygote().spawn`, the console script's entry,
    its imports done once), or started as the console script when `MCP_CENTER_TEST_FORK=0`. Its
    standard input is a pipe holding `input` and then closed (at most the 64 KiB a pipe buffers);
    its two output streams are captured.

    Returns:
        Its exit code and what it printed on stdout and stderr (text; undecodable bytes replaced).
    Raises:
        subprocess.TimeoutExpired: it ran longer than `timeout_s` seconds (it is killed first).
    """
    argv = [CLI, *args]
    read_end, write_end = os.pipe()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            os.write(write_end, input)
            os.close(write_end)
            write_end = -1
            if fork_enabled():
                proc = zygote().spawn(argv, env=env, stdin=read_end, stdout=out, stderr=err)
            else:
                proc = subprocess.Popen(argv, env=env, stdin=read_end, stdout=out, stderr=err)
        finally:
            os.close(read_end)
            if write_end != -1:
                os.close(write_end)
        try:
            code = proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise
        out.seek(0)
        err.seek(0)
        return CliResult(code, out.read().decode(errors="replace"), err.read().decode(errors="replace"))


def ready_with_cli(data_dir: Path, server_id: str, env: Mapping[str, str] | None = None) -> None:
    """Trust (`--yes`), test and enable the server `server_id` with the CLI, as a user would (R-2.1 to
    R-2.3); `env` as `run_cli` takes it (beside a serve: its admin token, without which `test` and
    `enable` are refused, cli36). Raises AssertionError naming the step and its stderr when one does
    not exit 0."""
    for step in (("trust", server_id, "--yes"), ("test", server_id), ("enable", server_id)):
        done = run_cli(data_dir, *step, env=env)
        assert done.returncode == 0, (step, done.stderr)


def _fixed_width(console: Console) -> int | None:
    """The width `console` was fixed to (None: it asks the terminal each time)."""
    return console._width  # pyright: ignore[reportPrivateUsage] - see run_cli
