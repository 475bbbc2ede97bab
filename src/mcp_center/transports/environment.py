"""The environment and the program of a stdio server: what it inherits, where its command is found (R-2.1, R-2.6).

Threat: host environment leaking into servers. The child gets exactly the `env` it is given;
`child_environment` builds it from a small allow-list of the host's variables (`INHERITED_ENV_VARS`)
plus the server's configured env, so host secrets (API keys, database URLs, our own master key) never
reach a server. `resolve_command` finds the program as exec would, without a shell, so the trust
digest names the real binary; `host_path` is the PATH it is looked up on.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping
from typing import Final

from mcp_center.transports.sandbox import TLS_TRUST_ENV_VARS

__all__ = ["INHERITED_ENV_VARS", "child_environment", "host_path", "resolve_command"]

INHERITED_ENV_VARS: Final = (
    "HOME",
    "LOGNAME",
    "PATH",
    "SHELL",
    "TERM",
    "USER",
    "LANG",
    "LC_ALL",
    "TMPDIR",
    *TLS_TRUST_ENV_VARS,
)
"""The only host variables a server inherits (`child_environment`); everything else stays ours.
Proxy variables are deliberately absent (their URLs may carry credentials): configure them per server."""


def child_environment(configured: Mapping[str, str]) -> dict[str, str]:
    """Return the environment a stdio server runs with.

    The host's values of `INHERITED_ENV_VARS` (HOME, LOGNAME, PATH, SHELL, TERM, USER, LANG, LC_ALL,
    TMPDIR, and the CA-bundle locations of `TLS_TRUST_ENV_VARS`) overlaid with the server's
    `configured` env. Host values starting with `()` are skipped (exported shell functions, the
    Shellshock vector). Nothing else of the host's environment is passed on, so secrets of the host
    never reach a server (R-2.6; threat model in the module doc).

    Args:
        configured: The server's own env (already decrypted); wins over inherited values.
    Returns:
        A new dict; neither `os.environ` nor `configured` is modified.
    """
    env: dict[str, str] = {}
    for name in INHERITED_ENV_VARS:
        value = os.environ.get(name)
        if value is not None and not value.startswith("()"):
            env[name] = value
    env["PATH"] = host_path()
    env.update(configured)
    return env


def host_path() -> str:
    """The PATH stdio commands are looked up on: the host's PATH, then mcp-center's own bin directory.

    The bin directory of the running interpreter (the venv with `uvx`, which the stdio template uses)
    is appended, not prepended, so a server's `python` or `node` is still the host's. The CLI and
    `serve` resolve a command the same way whichever shell started them, so the trusted
    `command_path` (R-2.1) does not depend on how a process was launched.
    """
    own_bin = os.path.dirname(sys.executable)
    entries = [e for e in os.environ.get("PATH", os.defpath).split(os.pathsep) if e]
    if own_bin and own_bin not in entries:
        entries.append(own_bin)
    return os.pathsep.join(entries)


def resolve_command(command: str, env_path: str | None, *, cwd: str | None = None) -> str | None:
    """Return the absolute path of `command` as the child would run it, or None when not found.

    Mirrors what exec does for a stdio server, so the trust digest can name the real binary:
    a command containing `/` is a path (relative ones are taken from `cwd`, as exec does after the
    child changes directory) and must be an existing regular file with an exec bit; a bare name is
    looked up on `env_path`, the child's PATH (`os.defpath` when the child has no PATH, as exec
    does). No shell rules apply: `"echo hi | cat"` is a file name and is not found. It touches the
    file system: from async code call it through `anyio.to_thread.run_sync`.

    Args:
        command: argv[0] of the server.
        env_path: The PATH of the child's environment (see `child_environment`), or None.
        cwd: The child's working directory; None means ours.
    Returns:
        An absolute path, or None.
    """
    if not command or "\0" in command:
        return None
    if "/" in command:
        path = os.path.abspath(os.path.join(cwd, command) if cwd is not None else command)
        return path if os.path.isfile(path) and os.access(path, os.X_OK) else None
    found = shutil.which(command, path=os.defpath if env_path is None else env_path)
    return os.path.abspath(found) if found is not None else None
