"""Data directories in memory for the serves the tests take turns on (issue 16).

The store commits every change with several `fsync` calls (temp file, journal, directory;
`mcp_center/store/journal.py`). On this machine's ext4 disk, shared with the other workers and
whatever else runs, one commit waits 20-80 ms for the disk's journal, so a browser test that fills
the gateway-token limit (100 creates, then 100 revokes when its turn ends) spent 8 s of a loaded
run in `fsync`. The serves of `shared_host` and `spare_serves` keep their data directory on a
memory file system (`/dev/shm`), where `fsync` returns at once; everything else stays where it
was (their `serve.log`, `retired.log`, and the data directories of the tests that start their own
serve). Durability itself is tested against a disk that fails on purpose (`faulty_disk`), not
against this one.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

__all__ = ["RAM_ROOT", "ram_directory", "remove_ram_directory"]

RAM_ROOT = Path("/dev/shm")  # noqa: S108 - only `mkdtemp` uses it: a new private (0700) directory
"""Where the directories go: a tmpfs on Linux. Without it, `ram_directory` makes a plain directory."""


def ram_directory(link: Path, root: Path = RAM_ROOT) -> Path:
    """Make `link` (which must not exist; its parent must) a symlink to a new empty directory under
    `root`, or a plain directory when `root` is not a writable directory. Returns `link`.

    Remove it with `remove_ram_directory(link)` (the memory is not freed otherwise).

    Raises:
        FileExistsError: `link` exists. OSError: the directory or the link could not be made.
    """
    if link.exists() or link.is_symlink():
        raise FileExistsError(link)
    if not root.is_dir():
        link.mkdir()
        return link
    try:
        target = Path(tempfile.mkdtemp(prefix="mcp-center-test-", dir=root))
    except OSError:
        link.mkdir()
        return link
    link.symlink_to(target, target_is_directory=True)
    return link


def remove_ram_directory(link: Path) -> None:
    """Remove what `ram_directory(link)` made: the directory with what it holds, and the link (nothing
    happens when `link` does not exist)."""
    if link.is_symlink():
        shutil.rmtree(link.readlink(), ignore_errors=True)
        link.unlink()
    elif link.is_dir():
        shutil.rmtree(link, ignore_errors=True)
