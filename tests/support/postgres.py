"""A throwaway PostgreSQL 15 cluster for the tests (R-10.1): Debian's binaries, a temp dir, a Unix socket.

`PgCluster.start()` runs `initdb` into a fresh temporary directory and starts `postgres` listening
only on a Unix socket in that directory (no TCP port to collide with, nothing of the Debian
package's own cluster used or touched). PostgreSQL refuses to run as root, so when the tests run as
root the cluster belongs to the `postgres` user that Debian's package creates (`runuser`).
`database()` creates a fresh, empty database per test; `stop()` / `start_again()` take the server
away and bring it back (the outage tests); `close()` stops it and removes the directory.

A test run that is killed (SIGKILL, a `timeout`) never reaches `close()`, and `pg_ctl` detaches the
postmaster into a session of its own: it would run on with PPID 1. So every start registers the
postmaster's group with a process guard of this process (`ProcessGuard`, the same watchdog that stops
a killed host's stdio servers, R-2.6): when the test process dies in any way, its watchdog stops the
cluster.

Missing binaries fail loudly with what to install (`.ci/run` installs them): a skipped database
test would hide a broken backend.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
from psycopg import sql

from mcp_center.transports.guard import ProcessGuard
from mcp_center.transports.reaper import GroupRef

__all__ = ["PG_BIN", "PgCluster", "waiting_for_advisory_lock"]

PG_BIN = Path(os.environ.get("MCP_CENTER_TEST_PG_BIN", "/usr/lib/postgresql/15/bin"))
SUPERUSER = "mcp"


class PgCluster:
    """One test cluster (see the module docstring)."""

    def __init__(self) -> None:
        if not (PG_BIN / "initdb").exists():
            raise RuntimeError(
                f"PostgreSQL 15 binaries not found in {PG_BIN}: install Debian's postgresql "
                "('apt-get install -y postgresql', as .ci/run does) or set MCP_CENTER_TEST_PG_BIN"
            )
        self.root = Path(tempfile.mkdtemp(prefix="mcp-center-pg-"))
        self.root.chmod(0o755)
        self.data = self.root / "data"
        self.log = self.root / "postgres.log"
        self._user = "postgres" if os.geteuid() == 0 else None
        self._guard = ProcessGuard(grace_s=2.0)  # its own: the process-wide guard's groups are the tests'
        self._group: GroupRef | None = None
        if self._user is not None:
            entry = pwd.getpwnam(self._user)
            os.chown(self.root, entry.pw_uid, entry.pw_gid)

    def _run(self, *argv: str) -> None:
        command = [*(["runuser", "-u", self._user, "--"] if self._user else []), *argv]
        done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=120)
        if done.returncode != 0:
            log = self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""
            raise RuntimeError(f"{argv[0]} failed ({done.returncode}): {done.stderr.strip()}\n{log}")

    def start(self) -> None:
        """initdb (first time only) and start the server; returns once it accepts connections."""
        if not self.data.exists():
            self._run(
                str(PG_BIN / "initdb"),
                "-D",
                str(self.data),
                "-U",
                SUPERUSER,
                "-A",
                "trust",
                "--no-sync",
                "-E",
                "UTF8",
                "--locale=C.UTF-8",
            )
        self.start_again()

    def start_again(self) -> None:
        """Start the (stopped) server on the same socket."""
        options = f"-c listen_addresses='' -k {self.root} -c fsync=off -c max_connections=200"
        self._run(str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-l", str(self.log), "-o", options, "-w", "start")
        self._watch()

    def stop(self, mode: str = "fast") -> None:
        """Stop the server (`fast`: disconnect every client now; `immediate`: as a crash would)."""
        self._run(str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop")
        self._unwatch()

    @property
    def postmaster_pid(self) -> int:
        """The running postmaster's pid (the first line of `postmaster.pid`); it leads its own session."""
        return int((self.data / "postmaster.pid").read_text().split("\n", 1)[0])

    def _watch(self) -> None:
        """Register the started postmaster's group with this process's watchdog (see the module doc)."""
        self._guard.start()
        self._group = self._guard.adopt(self.postmaster_pid)

    def _unwatch(self) -> None:
        if self._group is not None:
            self._guard.release(self._group)
            self._group = None

    def url(self, database: str = "postgres") -> str:
        """A libpq URL for `database` over the cluster's Unix socket."""
        return f"postgresql://{SUPERUSER}@/{database}?host={self.root}"

    def database(self) -> str:
        """A new, empty database; returns its URL."""
        name = "t_" + uuid.uuid4().hex[:16]
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        return self.url(name)

    def drop(self, url: str) -> None:
        """Drop the database of `url` (its remaining connections are ended first)."""
        name = urlsplit(url).path.lstrip("/")
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
                (name,),
            )
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(name)))

    def close(self) -> None:
        """Stop the server (if it runs) and remove everything."""
        with contextlib.suppress(RuntimeError):
            self.stop("immediate")
        self._guard.close()
        shutil.rmtree(self.root, ignore_errors=True)


def waiting_for_advisory_lock(url: str) -> int:
    """How many sessions of the database at `url` wait for an advisory lock now (pg_stat_activity)."""
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            " AND wait_event_type = 'Lock' AND wait_event = 'advisory'"
        ).fetchone()
    return int(row[0]) if row else 0


def advisory_lock_waiters(conn: psycopg.Connection[tuple[object, ...]], classid: int, key: int) -> int:
    """How many sessions wait now (not granted) for the two-key advisory lock `(classid, key)` of the
    database `conn` is on (pg_locks; a two-int4 advisory lock is objsubid 2)."""
    row = conn.execute(
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND classid = %s"
        " AND objid = %s::oid AND objsubid = 2"
        " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
        (classid, key),
    ).fetchone()
    return int(str(row[0])) if row else 0
