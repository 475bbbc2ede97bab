"""Where the `serve` that owns a data directory listens, for the CLI (R-9.2).

`mcp-center serve` claims its data directory (`store.owner.FileOwnerLock`) and records its pid
and, once its socket is bound, its URLs (public, and the listen address the CLI connects to) in
`<data dir>/serve.json`. CLI commands that talk to the running host (`approvals`, `auth`,
`gateway --stdio`, `list`'s live states) read it, so `serve --port 8799 --data-dir X` is found by
`mcp-center ... --data-dir X` without `--url`, also when X's serve has a public URL (a proxy this
machine may not reach); `export --gateway` prints the public URL, for clients. A
record whose process is gone (or whose pid now belongs to another program) is ignored. It holds
no secret.
"""

from __future__ import annotations

from pathlib import Path

from mcp_center.store.owner import OWNER_FILE, FileOwnerLock, ServeOwner

__all__ = ["RUNNING_FILE", "running_owner", "running_url"]

RUNNING_FILE = OWNER_FILE


def running_owner(data_dir: Path) -> ServeOwner | None:
    """The live `serve` that owns `data_dir` (pid, URL once it listens), or None when none runs."""
    return FileOwnerLock(data_dir).current()


def running_url(data_dir: Path) -> str | None:
    """Where a process on this machine reaches the live `serve` of `data_dir`: its listen address
    (`ServeOwner.address`, never its public URL, which may be a proxy this machine cannot reach),
    no trailing slash; None when none runs or it does not listen yet."""
    owner = running_owner(data_dir)
    return owner.address if owner is not None else None
