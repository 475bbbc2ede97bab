"""A `Disk` that fails one chosen primitive call with a chosen errno: fault injection at the store's seam.

Our own small fake (`mcp_center.store.files.Disk` is the seam every store write goes through): it
counts the calls of `create`, `write`, `fsync` (files and directories), `replace` and `unlink` and
makes the n-th one raise `OSError(errno)` naming its file, as the kernel would for ENOSPC or EIO.
The call still happens for every other count, on the real file system.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from mcp_center.store import Disk

__all__ = ["FaultyDisk", "Op"]


@dataclass(frozen=True)
class Op:
    """One primitive call: what (`create`, `write`, `fsync`, `replace`, `unlink`) and on which file name."""

    kind: str
    name: str


@dataclass
class FaultyDisk(Disk):
    """Fails call number `fail_at` (1-based, counted since the last `arm`) with `errno`; None fails nothing."""

    fail_at: int | None = None
    errno: int = 28  # ENOSPC
    ops: list[Op] = field(default_factory=list[Op])
    failed: Op | None = None

    def arm(self, fail_at: int | None, errno: int) -> None:
        """Count from zero again; fail call `fail_at` with `errno` (None: count only)."""
        self.ops.clear()
        self.fail_at, self.errno, self.failed = fail_at, errno, None

    def _step(self, kind: str, path: Path) -> None:
        op = Op(kind, path.name)
        self.ops.append(op)
        if self.fail_at is not None and len(self.ops) == self.fail_at:
            self.failed = op
            raise OSError(self.errno, os.strerror(self.errno), str(path))

    def create(self, path: Path, mode: int) -> int:
        self._step("create", path)
        return super().create(path, mode)

    def write(self, fd: int, data: bytes, path: Path) -> None:
        self._step("write", path)
        super().write(fd, data, path)

    def fsync(self, fd: int, path: Path) -> None:
        self._step("fsync", path)
        super().fsync(fd, path)

    def replace(self, source: Path, target: Path) -> None:
        self._step("replace", target)
        super().replace(source, target)

    def unlink(self, path: Path) -> None:
        self._step("unlink", path)
        super().unlink(path)
