"""Where the `serve` that owns a data directory listens: `<data dir>/serve.json`.

`mcp-center serve` writes `{"url", "pid"}` once its socket is bound (so a second `serve` that
fails to bind never overwrites the record of the one that runs) and removes it when it stops.
CLI commands that talk to the running host (`approvals`, `auth`, `gateway --stdio`, `export
--gateway`) read it, so `serve --port 8799 --data-dir X` is found by `mcp-center ... --data-dir X`
without `--url`. A record whose process is gone is ignored. It holds no secret.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

from mcp_center.store.files import atomic_write

__all__ = ["RUNNING_FILE", "forget_running", "record_running", "running_url"]

RUNNING_FILE = "serve.json"


def record_running(data_dir: Path, url: str, pid: int | None = None) -> None:
    """Write `<data dir>/serve.json` for the process `pid` (default: this one) listening at `url`.

    Raises:
        OSError: the data directory is not writable.
    """
    doc = {"url": url.rstrip("/"), "pid": os.getpid() if pid is None else pid}
    atomic_write(data_dir / RUNNING_FILE, (json.dumps(doc) + "\n").encode("utf-8"), mode=0o644)


def forget_running(data_dir: Path, pid: int | None = None) -> None:
    """Remove the record if it is the one process `pid` (default: this one) wrote; never raises."""
    path = data_dir / RUNNING_FILE
    if _read(path).get("pid") == (os.getpid() if pid is None else pid):
        with contextlib.suppress(OSError):
            path.unlink()


def running_url(data_dir: Path) -> str | None:
    """The base URL of the live `serve` of `data_dir` (no trailing slash), or None when none runs."""
    doc = _read(data_dir / RUNNING_FILE)
    url, pid = doc.get("url"), doc.get("pid")
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        return None
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0 or not _alive(pid):
        return None
    return url


def _read(path: Path) -> dict[str, object]:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    return True
