"""Process facts for tests (Linux /proc): is a pid alive, what descends from it."""

from __future__ import annotations

from pathlib import Path


def alive(pid: int) -> bool:
    """True while `pid` exists and is not a zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"


def descendants(pid: int) -> set[int]:
    """Every live descendant of `pid`."""
    found: set[int] = set()
    stack = [pid]
    while stack:
        current = stack.pop()
        try:
            tasks = list(Path(f"/proc/{current}/task").iterdir())
        except FileNotFoundError:
            continue
        for task in tasks:
            try:
                children = (task / "children").read_text().split()
            except (FileNotFoundError, ProcessLookupError):
                continue
            for child in children:
                child_pid = int(child)
                if child_pid not in found and alive(child_pid):
                    found.add(child_pid)
                    stack.append(child_pid)
    return found
