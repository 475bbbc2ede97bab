"""The tests' throwaway PostgreSQL cluster dies with the test process that started it, however it ends.

A test run killed by SIGKILL (or a `timeout`) never reaches `PgCluster.close()`, and `pg_ctl` detaches
the postmaster into a session of its own; such a postmaster was once found running an hour after the
run that started it. `tests/support/postgres.py` registers it with a process guard's watchdog (R-2.6).
"""

from __future__ import annotations

import os
import select
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from mcp_center.transports.reaper import read_stat

ROOT = Path(__file__).parents[2]
HOLDER = """
import sys
from tests.support.postgres import PgCluster
cluster = PgCluster()
cluster.start()
print(cluster.postmaster_pid, cluster.root, flush=True)
sys.stdin.read()  # until killed
"""


def test_a_killed_test_process_takes_its_cluster_with_it() -> None:
    root: Path | None = None
    with subprocess.Popen(
        [sys.executable, "-c", HOLDER], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as holder:
        try:
            assert holder.stdout is not None
            pid_text, root_text = holder.stdout.readline().split()
            postmaster, root = int(pid_text), Path(root_text)
            stat = read_stat(postmaster)
            assert stat is not None and stat.live
            gone = os.pidfd_open(postmaster)
            try:
                holder.send_signal(signal.SIGKILL)
                holder.wait(timeout=30)
                readable, _, _ = select.select([gone], [], [], 30.0)  # the postmaster's exit, or 30 s
            finally:
                os.close(gone)
            assert readable, f"the cluster's postmaster {postmaster} outlived the killed test process"
        finally:
            if holder.poll() is None:
                holder.kill()
                holder.wait(timeout=30)
            if root is not None:
                shutil.rmtree(root, ignore_errors=True)
