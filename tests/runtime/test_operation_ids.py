"""Fresh operation ids (R-3.8): the shape of `uuid4().hex`, unique within a process and across processes."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from mcp_center.runtime import new_operation_id


def test_operation_ids_are_32_hex_digits_and_never_repeat_here() -> None:
    ids = [new_operation_id() for _ in range(10_000)]
    assert all(re.fullmatch(r"[0-9a-f]{32}", op_id) for op_id in ids)
    assert len(set(ids)) == len(ids)


def test_another_process_and_a_forked_child_draw_other_ids() -> None:
    here = new_operation_id()
    code = "from mcp_center.runtime import new_operation_id; print(new_operation_id())"
    there = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout.strip()
    assert re.fullmatch(r"[0-9a-f]{32}", there)
    assert there[:16] != here[:16]
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its next id, then out at once
        os.write(write, new_operation_id().encode())
        os._exit(0)
    os.close(write)
    _, status = os.waitpid(pid, 0)
    child = os.read(read, 64).decode()
    os.close(read)
    assert os.waitstatus_to_exitcode(status) == 0
    assert child[:16] != here[:16]  # not the parent's prefix: the parent's next id cannot be the child's
    assert new_operation_id() != child
