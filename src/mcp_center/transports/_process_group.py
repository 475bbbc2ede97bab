"""Signalling and watching a stdio server's process group (R-2.6, docs/architecture.md#process-lifecycle).

A stdio server runs in its own session and process group (pid == pgid == sid). Closing signals the
whole group, and waits until no live member is left: `group_alive` treats zombies (dead members
that init has not reaped yet) as gone, using a /proc scan on Linux.

Package-private: `transports/stdio.py` is its only user.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
from typing import Final

import anyio
import anyio.to_thread

__all__ = ["group_alive", "signal_group", "wait_group_gone"]

logger = logging.getLogger("mcp_center.transports.stdio")
"""The stdio transport's logger: these records belong to it."""

_PROBE_FIRST_S: Final = 0.01
_PROBE_MAX_S: Final = 0.1
"""Group liveness is polled (no OS event exists for "process group empty"), backing off from the
first to the max interval, in seconds."""


def signal_group(pgid: int, signum: signal.Signals) -> bool:
    """Send `signum` to process group `pgid`. Returns False when the group is already gone."""
    if pgid <= 1:  # never 0 (our own group) or 1 (everything)
        return False
    try:
        os.killpg(pgid, signum)
    except ProcessLookupError:
        return False
    except PermissionError:
        logger.error("stdio.signal_refused", extra={"pgid": pgid, "signal": signum.name})
        return False
    return True


async def wait_group_gone(pgid: int, timeout_s: float) -> bool:
    """Wait up to `timeout_s` seconds until group `pgid` has no live member. True when it has none."""
    interval = _PROBE_FIRST_S
    with anyio.move_on_after(timeout_s):
        while await group_alive(pgid):
            await anyio.sleep(interval)
            interval = min(interval * 2, _PROBE_MAX_S)
        return True
    return not await group_alive(pgid)


async def group_alive(pgid: int) -> bool:
    """Whether process group `pgid` still has a member that is not a zombie.

    `killpg(pgid, 0)` failing with ESRCH means the group is empty. Success may only mean zombies
    remain: dead members that init has not reaped yet (some container inits reap late). Zombies
    hold no resources, so on Linux a /proc scan decides; elsewhere we must assume the worst.
    """
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    if not sys.platform.startswith("linux"):
        return True
    return await anyio.to_thread.run_sync(_linux_group_has_live_member, pgid)


def _linux_group_has_live_member(pgid: int) -> bool:
    try:
        names = os.listdir("/proc")
    except OSError:
        return True
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stat_file:
                stat = stat_file.read()
        except OSError:
            continue
        # "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses, so cut at the last ")".
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 2 and fields[2] == str(pgid).encode() and fields[0] not in (b"Z", b"X"):
            return True
    return False
