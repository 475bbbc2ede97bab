"""Warm-up: fill a sandboxed server's package caches while only the package manager runs (R-11.1).

A server started through `npx` or `uvx` downloads its package on the first start. With
`network: none` it cannot, so the sandbox sets `npm_config_offline` / `UV_OFFLINE` (fail at once
instead of retrying for minutes) and the caches must be filled beforehand. The warm-up does that
*inside the server's own sandbox* (same home, same limits, same uid) with egress for this one run,
and runs the package manager in a form that installs the package but does not start the server:

- `npx [opts] PKG args...` becomes `npx --yes --package=PKG -- true`: npm installs PKG (and its
  dependencies) into `~/.npm/_npx/<hash of the package list>`, the same directory `npx PKG` later
  finds, and runs `/usr/bin/true` instead of the package's binary.
- `uvx [opts] [--from SPEC] CMD args...` becomes `uvx [opts] --from SPEC python -c pass`: uv
  resolves and caches SPEC's wheels (and a Python if it must download one) in `~/.cache/uv`, then
  runs an empty Python in that environment.

What still runs with network access is the package manager and whatever install scripts the
package declares (npm `postinstall`): the same code a cold unconfined `npx` would run, here inside
the sandbox. Threat stopped: a sandboxed server's own code never runs with egress it was not given.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import anyio
import anyio.to_thread

from mcp_center.secrets import Redactor, mask_credential_shapes
from mcp_center.transports._guarded_spawn import open_guarded_process, spawn_failure
from mcp_center.transports.guard import process_guard
from mcp_center.transports.sandbox import OFFLINE_ENV, SandboxSpec, prepare_launch

__all__ = ["WARM_UP_TIMEOUT_S", "WarmUpResult", "run_warm_up", "warm_up_argv"]

WARM_UP_TIMEOUT_S = 600.0
"""Seconds a warm-up may take (a cold install of a large package over a slow link)."""
_OUTPUT_LINES = 20

_NPX_VALUE_OPTIONS = frozenset({"-p", "--package", "-c", "--call", "--registry", "--cache", "--userconfig"})
_UVX_VALUE_OPTIONS = frozenset(
    {
        "--from", "--with", "--with-editable", "--with-requirements", "--with-executables-from",
        "-c", "--constraints", "--overrides", "-p", "--python", "--env-file", "--python-platform",
        "--torch-backend", "--index", "--default-index", "-i", "--index-url", "--extra-index-url",
        "-f", "--find-links", "--index-strategy", "--keyring-provider", "--upgrade-group",
        "--resolution", "--prerelease", "--prerelease-package", "--fork-strategy", "--exclude-newer",
        "--exclude-newer-package", "--no-sources-package", "--reinstall-package", "--link-mode",
        "--config-setting", "-C", "--config-settings-package", "--no-build-isolation-package",
        "--no-build-package", "--no-binary-package", "--cache-dir", "--refresh-package",
        "-P", "--upgrade-package", "--color", "--allow-insecure-host", "--directory", "--project",
        "--config-file",
    }
)  # fmt: skip
"""uvx options that take a value (uv 0.13 `uvx --help`); the first other arg is the command."""


@dataclass(frozen=True)
class WarmUpResult:
    """What a warm-up did.

    Attributes:
        ok: The package manager exited with 0.
        argv: The command run inside the sandbox (program path and arguments; never env values).
        exit_code: Its exit status (negative: killed by that signal; None: timed out).
        elapsed_ms: Wall time in milliseconds.
        output_tail: Its last lines of stdout and stderr, redacted.
        instance: The name of the instance whose home was warmed (the service fills it in; each
            instance has its own home of a server).
        others: The other live instances (names), told through the shared store to warm their own
            homes of the server in the background (after a successful warm-up only).
    """

    ok: bool
    argv: tuple[str, ...]
    exit_code: int | None
    elapsed_ms: int
    output_tail: tuple[str, ...]
    instance: str | None = None
    others: tuple[str, ...] = ()


def warm_up_argv(argv: Sequence[str]) -> list[str] | None:
    """The fetch-only form of a server's command line, or None when it is not npx or uvx.

    Args:
        argv: The server's resolved command line (absolute program path first).
    Returns:
        The command that installs the same package(s) without starting the server (see the module
        doc), or None when the program is neither `npx` nor `uvx` or names no package.
    """
    if not argv:
        return None
    program, args = argv[0], list(argv[1:])
    name = os.path.basename(program)
    if name == "npx":
        return _npx_warm_up(program, args)
    if name == "uvx":
        return _uvx_warm_up(program, args)
    return None


def _npx_warm_up(program: str, args: list[str]) -> list[str] | None:
    packages: list[str] = []
    options: list[str] = []
    first: str | None = None
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            first = args[i + 1] if i + 1 < len(args) else None
            break
        if arg.startswith("--package="):
            packages.append(arg.split("=", 1)[1])
        elif arg in ("-p", "--package") and i + 1 < len(args):
            packages.append(args[i + 1])
            i += 1
        elif arg.startswith("--registry"):
            options += [arg] if "=" in arg else args[i : i + 2]
            i += 0 if "=" in arg else 1
        elif arg in _NPX_VALUE_OPTIONS:
            i += 1
        elif not arg.startswith("-"):
            first = arg
            break
        i += 1
    if not packages and first is not None:
        packages = [first]
    if not packages:
        return None
    return [program, "--yes", *options, *(f"--package={package}" for package in packages), "--", "true"]


def _uvx_warm_up(program: str, args: list[str]) -> list[str] | None:
    options: list[str] = []
    has_from = False
    command: str | None = None
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            command = args[i + 1] if i + 1 < len(args) else None
            break
        if not arg.startswith("-"):
            command = arg
            break
        if arg == "--offline":
            i += 1
            continue
        option = arg.split("=", 1)[0]
        has_from = has_from or option == "--from"
        if option in _UVX_VALUE_OPTIONS and "=" not in arg and i + 1 < len(args):
            options += [arg, args[i + 1]]
            i += 2
            continue
        options.append(arg)
        i += 1
    if command is None:
        return None
    source = [] if has_from else ["--from", command]
    return [program, *options, *source, "python", "-c", "pass"]


async def run_warm_up(
    spec: SandboxSpec,
    argv: Sequence[str],
    env: Mapping[str, str],
    *,
    redactor: Redactor | None = None,
    timeout_s: float = WARM_UP_TIMEOUT_S,
) -> WarmUpResult:
    """Run `argv` (from `warm_up_argv`) in `spec`'s sandbox with egress, to completion.

    The run uses the server's own home and limits; the network is `egress` and `OFFLINE_ENV` is
    removed from `env` for this run only. The process group is registered with the process guard
    like a server's, and killed (SIGKILL to the group, which ends the sandbox) at the deadline.

    Args:
        spec: The server's sandbox (its policy's network is overridden).
        argv: The fetch-only command line.
        env: The server's sandbox environment (`sandbox_environment`).
        redactor: Applied to the output lines kept.
        timeout_s: Deadline in seconds.
    Returns:
        The outcome; a failed package manager is a result with `ok` False, not an exception.
    Raises:
        SandboxUnavailable / ServerUnreachable: as `prepare_launch` (the sandbox cannot start);
            ServerUnreachable (`spawn_failed`) when bubblewrap or the exec gate cannot start.
    """
    online = replace(spec, policy=spec.policy.model_copy(update={"network": "egress"}))
    run_env = {name: value for name, value in env.items() if OFFLINE_ENV.get(name) != value}
    guard = process_guard()
    if guard.startable:
        await anyio.to_thread.run_sync(guard.start)
    launch = await anyio.to_thread.run_sync(lambda: prepare_launch(online, argv, cwd=None))
    tail: deque[str] = deque(maxlen=_OUTPUT_LINES)
    started = anyio.current_time()
    exit_code: int | None = None
    try:  # cancellable: `open_guarded_process` shields what must not be cut and strands no child
        process, group = await open_guarded_process(  # adopted before anything runs in it
            launch.argv,
            env=run_env,
            cwd="/",
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            pass_fds=launch.pass_fds,
            guard=guard,
        )
    except OSError as exc:  # bubblewrap's exec, or the exec gate's own failure
        raise spawn_failure(launch.argv[0], None, exc) from exc
    finally:
        launch.close()
    if group is not None and guard.recording:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(guard.save)
    try:
        with anyio.move_on_after(timeout_s):
            assert process.stdout is not None
            pending = b""
            async for chunk in process.stdout:
                lines = (pending + chunk).split(b"\n")
                pending = lines.pop()
                tail.extend(line.decode("utf-8", "replace").rstrip("\r")[:500] for line in lines if line.strip())
            if pending.strip():
                tail.append(pending.decode("utf-8", "replace")[:500])
            exit_code = await process.wait()
    finally:
        with anyio.CancelScope(shield=True):
            if process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)  # bubblewrap dies, and its PID namespace with it
                await process.wait()
            await process.aclose()
            if group is not None:
                guard.release(group)
                if guard.recording:
                    await anyio.to_thread.run_sync(guard.save)
    elapsed_ms = int((anyio.current_time() - started) * 1000)
    shown = tuple(mask_credential_shapes(redactor.redact(line) if redactor is not None else line) for line in tail)
    return WarmUpResult(exit_code == 0, tuple(argv), exit_code, elapsed_ms, shown)
