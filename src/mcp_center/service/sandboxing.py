"""The service side of sandboxed stdio servers (R-11.1, R-11.2): where their homes live, what the
trust page warns about, the host's sandbox facts for the page and CLI, and the warm-up use case.

The policy itself is configuration (`config/sandbox.py`) and part of the connection summary
(`service/summary.py`); the host mechanics are `transports/sandbox.py`. Each sandboxed server has
`<data dir>/sandbox/<server id>/<creation stamp>/{home,tmp}`, created at its first start and removed
with the server (`remove_home`). The data directory is passed as a hidden path, so no bind can ever
show it.

The creation stamp (the record's `created_at`, `home_key`) makes a home belong to one server, not
to an id: a server deleted and added again under the same id starts with an empty home, on this
instance and on every other one, even one that missed the deletion. Homes of servers that no longer
exist are removed by `sweep_homes` whenever an instance reconciles everything (at its start and
after every configuration change it learns of, R-9.2, R-10.2).
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mcp_center.config import ServerConfig, Settings, StdioServerConfig
from mcp_center.errors import SandboxWarmUpUnsupported
from mcp_center.secrets import Redactor
from mcp_center.store import ServerRecord, StoreState
from mcp_center.store.owner import database_of
from mcp_center.transports import ConnectionSpec, stdio_environment
from mcp_center.transports.sandbox import (
    SANDBOX_HOME,
    SandboxSpec,
    remove_sandbox_dir,
    sandbox_support,
    sandbox_uid,
    visible_in_sandbox,
)
from mcp_center.transports.warmup import WarmUpResult, run_warm_up, warm_up_argv

__all__ = [
    "SANDBOX_DIR",
    "home_key",
    "host_facts",
    "remove_home",
    "sandbox_root",
    "sandbox_spec",
    "sandbox_warnings",
    "sweep_homes",
    "warm_up",
]

logger = logging.getLogger(__name__)

SANDBOX_DIR = "sandbox"
"""`<data dir>/sandbox/<server id>/<creation stamp>/` holds each sandboxed server's home and /tmp."""


def home_key(created_at: datetime) -> str:
    """The name of one server's sandbox directory below its id: its creation time, to the microsecond.

    Args:
        created_at: The record's `created_at` (naive is taken as UTC).
    Returns:
        `YYYYMMDDTHHMMSSffffffZ` in UTC, e.g. `20261206T011411123456Z`: the same on every instance
        for one server (the record is shared), different for a server added again under its id.
    """
    aware = created_at if created_at.tzinfo is not None else created_at.replace(tzinfo=UTC)
    return aware.astimezone(UTC).strftime("%Y%m%dT%H%M%S%fZ")


def sandbox_root(settings: Settings, server_id: str, created_at: datetime) -> Path:
    """`<data dir>/sandbox/<server id>/<home_key(created_at)>`: the host directory of the home and /tmp
    of the server `server_id` created at `created_at`."""
    return settings.data_dir / SANDBOX_DIR / server_id / home_key(created_at)


def sandbox_spec(record: ServerRecord, settings: Settings) -> SandboxSpec | None:
    """The transport's `SandboxSpec` for a stdio server with a policy, else None."""
    config = record.config
    if not isinstance(config, StdioServerConfig) or config.sandbox is None:
        return None
    return SandboxSpec(
        server_id=config.id,
        policy=config.sandbox,
        root=sandbox_root(settings, config.id, record.created_at),
        hidden=(str(settings.data_dir),),
        stamp=home_key(record.created_at),
    )


def host_facts(config: ServerConfig, created_at: datetime) -> dict[str, Any] | None:
    """What this host makes of a server's policy, for the page and the CLI (not part of the digest).

    Args:
        config: The server's configuration.
        created_at: Its record's `created_at` (with the id, its uid on root hosts: `home_key`).

    Returns:
        None for servers without a policy; else `{"available", "missing", "message", "mode",
        "uid", "home"}`: whether sandboxes work here (and what is missing), `setuid` (mcp-center
        runs as root and the server as its own unprivileged `uid`) or `userns` (the server keeps
        the host user's uid inside a user namespace), and its home inside the sandbox.
        Blocking on the first call (the host check, see `sandbox_support`).
    """
    if not isinstance(config, StdioServerConfig) or config.sandbox is None:
        return None
    support = sandbox_support()
    return {
        "available": support.available,
        "missing": support.missing,
        "message": support.message,
        "mode": support.mode,
        "uid": sandbox_uid(config.id, home_key(created_at)) if support.mode == "setuid" else os.getuid(),
        "home": SANDBOX_HOME,
    }


def sandbox_warnings(
    config: ServerConfig, summary: Mapping[str, Any], settings: Settings, created_at: datetime
) -> list[dict[str, str]]:
    """Problems with a server's sandbox the user should see before trusting (they block nothing).
    `created_at` is its record's (with the id, its uid on root hosts).

    Codes: `SANDBOX_UNAVAILABLE` (this host cannot run it), `SANDBOX_PATH_MISSING` (an extra path
    does not exist), `SANDBOX_PATH_HIDDEN` (it lies in the data directory, which stays hidden),
    `SANDBOX_COMMAND_HIDDEN` / `SANDBOX_CWD_HIDDEN` (not visible inside: the start would fail),
    `SANDBOX_PATH_NOT_WRITABLE` (a writable path the server's uid cannot write, on root hosts).
    """
    if not isinstance(config, StdioServerConfig) or config.sandbox is None:
        return []
    policy = config.sandbox
    warnings: list[dict[str, str]] = []
    support = sandbox_support()
    if not support.available:
        warnings.append(
            {"code": "SANDBOX_UNAVAILABLE", "message": f"this host cannot run sandboxes: {support.message}"}
        )
    data_dir = str(settings.data_dir)
    uid = sandbox_uid(config.id, home_key(created_at))
    for entry in policy.paths:
        if entry.path == data_dir or entry.path.startswith(data_dir + "/"):
            warnings.append(
                {
                    "code": "SANDBOX_PATH_HIDDEN",
                    "message": f"sandbox path '{entry.path}' is inside mcp-center's data directory, which a sandboxed "
                    "server never sees: it will be empty",
                }
            )
        elif not os.path.exists(entry.path):
            warnings.append(
                {"code": "SANDBOX_PATH_MISSING", "message": f"sandbox path '{entry.path}' does not exist on this host"}
            )
        elif entry.writable and support.mode == "setuid" and not _writable_by(entry.path, uid):
            warnings.append(
                {
                    "code": "SANDBOX_PATH_NOT_WRITABLE",
                    "message": f"sandbox path '{entry.path}' is writable in the policy, but the server runs as uid "
                    f"{uid} (mcp-center runs as root) and may not write it: "
                    f"chown or setfacl it for that uid",
                }
            )
    command_path = summary.get("command_path")
    if isinstance(command_path, str) and not visible_in_sandbox(command_path, policy):
        warnings.append(
            {
                "code": "SANDBOX_COMMAND_HIDDEN",
                "message": f"the command '{command_path}' is not visible inside the sandbox: add its directory "
                "(for a virtual environment or a version manager, its whole prefix) to sandbox.paths",
            }
        )
    if config.cwd is not None and not visible_in_sandbox(config.cwd, policy, own_dirs=True):
        warnings.append(
            {
                "code": "SANDBOX_CWD_HIDDEN",
                "message": f"the working directory '{config.cwd}' is not visible inside the sandbox: add it to "
                "sandbox.paths (or leave cwd empty to start in the sandbox's home)",
            }
        )
    return warnings


def _writable_by(path: str, uid: int) -> bool:
    """Whether `uid` (not root, in none of the file's groups) may write `path` by its mode bits."""
    try:
        info = os.stat(path)
    except OSError:
        return False
    if info.st_uid == uid:
        return bool(info.st_mode & stat.S_IWUSR)
    return bool(info.st_mode & stat.S_IWOTH)


def remove_home(settings: Settings, record: ServerRecord) -> None:
    """Delete the sandbox home and /tmp of the deleted server `record` (blocking), and its id's
    directory when no other home is left in it; a failure is logged, never raised.

    Only this server's directory goes: a server added again under the same id in the meantime has
    another one (`home_key`).
    """
    root = sandbox_root(settings, record.id, record.created_at)
    try:
        remove_sandbox_dir(root)
    except OSError:
        logger.warning("sandbox.home_not_removed", extra={"server_id": record.id}, exc_info=True)
        return
    _remove_if_empty(root.parent)


def sweep_homes(settings: Settings, read: Callable[[], StoreState], in_use: Iterable[Path] = ()) -> list[Path]:
    """Remove the sandbox directories of servers that no longer exist (blocking; R-11.1, R-10.2).

    Every instance (and every process) keeps homes in its own data directory; a deletion made
    elsewhere, or while this instance was down, reaches it only as a changed store. Run at start
    and after each change learnt: whatever lies in `<data dir>/sandbox/` that is not the directory
    of a current server (its id and `home_key`) is removed. A home of the layout before the stamp
    (`<id>/home`, `<id>/tmp`) is adopted by the current server of that id, moved to its stamped
    directory (`_adopt_legacy`): what a server wrote in its home before the upgrade is not lost; a
    legacy home of an id no current server has is removed.

    The directory is listed *before* `read()`, so a home made for a server created after the read
    is never among those listed (it is left for the next sweep). A failure to list the directory or
    to remove a home is logged, never raised (the next sweep tries again).
    A process on the directory's files whose serve keeps its state in a database (`database.json`,
    a library script given no database URL) removes nothing: those homes are the database's servers'.

    Args:
        read: Reads the store's current state (a fresh read, not a cache older than the listing).
        in_use: (Also kept, whatever the read says: a home of an id whose stamp is later than the
            read's record of that id, a replacement committed after the read.)
            Sandbox roots of this process's live connections (`SandboxSpec.root`): kept even when
            the store no longer names their server, since a change read there may not be reconciled
            yet; the next sweep, after the reconcile stopped them, removes them (a home removed
            under its running server let calls reach an emptied home: a loaded full run saw it).
    Returns:
        The paths removed.
    Raises:
        CenterError: `read` failed (nothing is removed then).
    """
    if settings.database_url is None and database_of(settings.data_dir) is not None:
        return []
    base = settings.data_dir / SANDBOX_DIR
    try:
        listed = [(entry, _children(entry)) for entry in base.iterdir()]
    except FileNotFoundError:
        return []
    except OSError:  # unreadable, or changed while listed: the next sweep tries again
        logger.warning("sandbox.homes_not_listed", exc_info=True)
        return []
    state = read()
    keep = {(record.id, home_key(record.created_at)) for record in state.servers.values()}
    keys = dict(keep)
    keep |= {(root.parent.name, root.name) for root in in_use}
    listed = [(entry, _adopt_legacy(entry, children, keys.get(entry.name))) for entry, children in listed]
    removed: list[Path] = []
    for entry, children in listed:
        newer = keys.get(entry.name)  # a stamp after the read's: a replacement the read does not know yet
        removed += [
            child
            for child in children
            if (entry.name, child.name) not in keep
            and not (newer is not None and child.name not in _LEGACY and child.name > newer)
            and _remove(child, entry.name)
        ]
        if not any(name == entry.name for name, _ in keep) and _remove_if_empty(entry):
            removed.append(entry)
    if removed:
        logger.info("sandbox.homes_removed", extra={"count": len(removed)})
    return removed


_LEGACY = frozenset({"home", "tmp"})
"""The directories of an id's sandbox in the layout before the stamp (`<id>/home`, `<id>/tmp`)."""


def _adopt_legacy(entry: Path, children: list[Path], key: str | None) -> list[Path]:
    """Move a pre-stamp `<id>/home` and `<id>/tmp` into `<id>/<key>/` of the current server of that id
    (`key`, None when no server has the id: then nothing moves and the sweep removes them). A target
    that exists already (a home the server made since) is kept and the legacy one left to the sweep;
    a rename that fails (another process moved it first, or the disk refuses) is logged.

    Returns:
        `children` without the directories moved.
    """
    if key is None:
        return children
    left: list[Path] = []
    for child in children:
        if child.name not in _LEGACY or child.is_symlink() or not child.is_dir():
            left.append(child)
            continue
        target = entry / key / child.name
        try:
            target.parent.mkdir(mode=0o700, exist_ok=True)
            if target.exists():
                left.append(child)
                continue
            child.rename(target)
        except FileNotFoundError:
            continue  # another process adopted it first
        except OSError:
            logger.warning("sandbox.home_not_adopted", extra={"server_id": entry.name}, exc_info=True)
            left.append(child)
    return left


def _children(entry: Path) -> list[Path]:
    """What lies in an id's directory; a stray file or link in place of one is itself to remove."""
    if entry.is_dir() and not entry.is_symlink():
        return list(entry.iterdir())
    return [entry]


def _remove(path: Path, server_id: str) -> bool:
    """Remove one server's sandbox directory (or a stray file or link); a failure is logged."""
    try:
        if path.is_dir() and not path.is_symlink():
            remove_sandbox_dir(path)
        else:
            path.unlink(missing_ok=True)
    except OSError:
        logger.warning("sandbox.home_not_removed", extra={"server_id": server_id}, exc_info=True)
        return False
    return True


def _remove_if_empty(directory: Path) -> bool:
    """rmdir `directory`; False when it is not empty, already gone, or not a directory."""
    try:
        directory.rmdir()
    except OSError:
        return False
    return True


async def warm_up(spec: ConnectionSpec, redactor: Redactor) -> WarmUpResult:
    """Fill the package caches of a sandboxed npx/uvx server inside its sandbox (R-11.1).

    See `transports/warmup.py` for what runs and with which network.

    Raises:
        SandboxWarmUpUnsupported: the server has no sandbox, or its command is not npx or uvx.
        SandboxUnavailable / ServerUnreachable: the sandbox cannot start.
    """
    if spec.sandbox is None:
        raise SandboxWarmUpUnsupported(
            "only sandboxed servers are warmed up (an unconfined npx/uvx server fills its caches when it starts)",
            details={"server_id": spec.server_id},
        )
    argv = warm_up_argv(spec.argv)
    if argv is None:
        raise SandboxWarmUpUnsupported(
            f"warm-up knows npx and uvx commands; '{os.path.basename(spec.argv[0])}' needs no download or is not "
            "one of them (give a server that downloads on start network 'egress' instead)",
            details={"server_id": spec.server_id},
        )
    result = await run_warm_up(spec.sandbox, argv, stdio_environment(spec), redactor=redactor)
    logger.info(
        "sandbox.warmed_up",
        extra={
            "server_id": spec.server_id,
            "ok": result.ok,
            "exit_code": result.exit_code,
            "elapsed_ms": result.elapsed_ms,
        },
    )
    return result
