"""A redo journal: several files of one directory replaced as one atomic change (R-9.1, R-1.2).

Why: one user action can change several files at once — a secret and the server that declares it
(`secrets.json` + `servers.json`), an authorization's credentials and the binding it records, a
card and the approval it answers. Renaming them one by one is not atomic: a SIGKILL between two
renames, or a full disk on the second, would leave the new secret with the old configuration.

The protocol (every step under the store's one exclusive lock):

1. Every new file is written to a temp file `.<name>.<commit>.tmp` beside its target and fsynced.
2. The journal, `journal.json` — the commit id and, per file, its target, its temp and the
   SHA-256 and size of its content — is written to its own temp, fsynced and renamed into place,
   and the directory is fsynced. **This rename is the commit point.** Before it, the old files
   are untouched and a failure (ENOSPC, EIO, a crash) leaves only temps, which are removed.
3. Each temp is renamed over its target; the directory is fsynced.
4. The journal is removed; the directory is fsynced.

Whoever takes the lock next (a reader or a writer, in any process) first looks for `journal.json`
and rolls it forward: a temp that is still there must match its recorded checksum and is renamed
over its target; a temp that is gone must already be its target (checked by checksum too). So a
crash after step 2 completes the change, a crash before it leaves no trace, and step 3 can be
repeated any number of times. Stray temps (of a commit that never reached step 2, or of an older
mcp-center) are removed whenever the lock holder finds no journal.

A journal that cannot be read, or whose files do not match their checksums, is damage that this
code did not cause (a disk error, a hand edit): it raises `StorageError` naming the journal and
the fault, and nothing is touched, so a person can look before anything is lost.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp_center.errors import StorageError
from mcp_center.models import is_object
from mcp_center.store.files import Disk, file_stamp, rare_file_stamp

__all__ = ["JOURNAL_FILE", "JOURNAL_SCHEMA_VERSION", "Journal", "storage_error"]

logger = logging.getLogger(__name__)

JOURNAL_FILE = "journal.json"
JOURNAL_SCHEMA_VERSION = 1


def storage_error(exc: OSError, *, doing: str) -> StorageError:
    """A `StorageError` for an I/O failure, naming the file (`details.file`) and the fault, and logged.

    Args:
        doing: What failed, for the message (`write`, `read`, ...).
    """
    file = str(exc.filename) if exc.filename is not None else None
    fault = exc.strerror or type(exc).__name__
    where = f" {file}" if file else ""
    logger.error("store.io_failed", extra={"file": file, "errno": exc.errno, "fault": fault, "doing": doing})
    return StorageError(
        f"cannot {doing}{where}: {fault}; nothing was changed",
        details={"file": file, "fault": fault, "errno": exc.errno},
    )


@dataclass(frozen=True)
class _Entry:
    target: str
    temp: str
    sha256: str
    size: int

    def to_json(self) -> dict[str, Any]:
        return {"file": self.target, "temp": self.temp, "sha256": self.sha256, "size": self.size}


class Journal:
    """Commit several files of `directory` at once, and roll a crashed commit forward.

    Call every method with the store's exclusive lock held.

    Args:
        directory: Where the files, their temps and the journal live (it must exist: the store
            checked it under its lock; nothing here creates it, R-9.1).
        disk: The write primitives (the fault-injection seam).
    """

    def __init__(self, directory: Path, disk: Disk) -> None:
        self.directory = directory
        self.path = directory / JOURNAL_FILE
        self._disk = disk

    def pending(self) -> bool:
        """True when a journal waits to be rolled forward (one `access` when none does)."""
        return rare_file_stamp(self.path) is not None

    def commit(self, files: Mapping[str, bytes], *, mtimes: Mapping[str, int] | None = None) -> bool:
        """Replace every `{name: content}` in the directory as one change (steps 1-4 above).

        Args:
            mtimes: Per name, the mtime (ns) of the file it replaces; the new file's mtime is set
                above it (`Disk.write_new(after_ns=...)`) so its `Stamp` always changes.
        Returns:
            True when every file is in place; False when the change is committed but could not be
            rolled forward yet (a rename failed after the commit point; the next lock holder
            completes it). Either way the change happened: callers answer success.
        Raises:
            StorageError: the change did not happen (the old files are untouched); `details.file`
                names the file whose write failed.
        """
        commit = uuid.uuid4().hex[:16]
        entries: list[_Entry] = []
        journal_temp = self.directory / f".{JOURNAL_FILE}.{commit}.tmp"
        try:
            for name, data in files.items():
                temp = f".{name}.{commit}.tmp"
                entries.append(_Entry(name, temp, hashlib.sha256(data).hexdigest(), len(data)))
                after = (mtimes or {}).get(name)
                self._disk.write_new(self.directory / temp, data, after_ns=after)
            doc = {"schema_version": JOURNAL_SCHEMA_VERSION, "commit": commit, "files": [e.to_json() for e in entries]}
            self._disk.write_new(journal_temp, (json.dumps(doc, indent=2) + "\n").encode("utf-8"))
            self._disk.replace(journal_temp, self.path)
        except OSError as exc:
            self._discard([self.directory / e.temp for e in entries] + [journal_temp])
            raise storage_error(self._named_by_target(exc, entries), doing="write") from None
        try:
            self._disk.fsync_dir(self.directory)
        except OSError as exc:
            # The journal is visible but maybe not durable: take the change back while we can.
            try:
                self._disk.unlink(self.path)
            except OSError:
                logger.error("store.commit_undo_failed", extra={"file": str(self.path)})
                return self._roll(entries)  # it stays committed; every reader rolls it forward
            self._discard([self.directory / e.temp for e in entries])
            raise storage_error(OSError(exc.errno, exc.strerror, str(self.path)), doing="write") from None
        return self._roll(entries)

    def recover(self) -> bool:
        """Roll a journal left by a crashed commit forward, then remove stray temps.

        Returns:
            True when a journal was found and completed.
        Raises:
            StorageError: the journal is unreadable or its files do not match it (nothing is
                touched); or a rename failed (the journal stays for the next attempt).
        """
        found = self.pending()
        if found:
            entries = self._read()
            for entry in entries:
                self._check(entry)
            if not self._roll(entries):
                raise StorageError(
                    f"cannot complete the committed change recorded in {self.path}; see the log",
                    details={"file": str(self.path), "fault": "roll_forward_failed"},
                )
            logger.warning("store.journal_rolled_forward", extra={"file": str(self.path), "files": len(entries)})
        self.sweep()
        return found

    def sweep(self) -> int:
        """Remove temp files no journal names (the caller checked there is no journal). Returns how many."""
        removed = 0
        try:
            names = os.listdir(self.directory)
        except FileNotFoundError:
            return 0
        for name in names:
            if name.startswith(".") and name.endswith(".tmp"):
                try:
                    self._disk.unlink(self.directory / name)
                    removed += 1
                except OSError:
                    logger.warning("store.temp_not_removed", extra={"file": str(self.directory / name)})
        if removed:
            logger.info("store.temps_removed", extra={"directory": str(self.directory), "count": removed})
        return removed

    # ----- internals ---------------------------------------------------------------------------

    def _roll(self, entries: list[_Entry]) -> bool:
        """Steps 3-4; False (journal kept) when a rename or the journal removal failed."""
        try:
            for entry in entries:
                temp = self.directory / entry.temp
                if file_stamp(temp) is not None:
                    self._disk.replace(temp, self.directory / entry.target)
            self._disk.fsync_dir(self.directory)
            self._disk.unlink(self.path)
            self._disk.fsync_dir(self.directory)
        except OSError as exc:
            logger.error(
                "store.roll_forward_failed",
                extra={"file": str(exc.filename), "errno": exc.errno, "fault": exc.strerror},
            )
            return False
        return True

    def _named_by_target(self, exc: OSError, entries: list[_Entry]) -> OSError:
        """`exc` naming the file being replaced rather than its temp (what a user recognizes)."""
        name = Path(str(exc.filename)).name if exc.filename is not None else None
        for entry in entries:
            if name == entry.temp:
                return OSError(exc.errno, exc.strerror, str(self.directory / entry.target))
        if name is not None and name.startswith(f".{JOURNAL_FILE}."):
            return OSError(exc.errno, exc.strerror, str(self.path))
        return exc

    def _read(self) -> list[_Entry]:
        def damaged(fault: str) -> StorageError:
            logger.error("store.journal_damaged", extra={"file": str(self.path), "fault": fault})
            return StorageError(
                f"{self.path} is damaged ({fault}); it records a change that was committed but not completed. "
                "Nothing was touched: restore the data directory from a backup, or move the journal away to "
                "drop that change",
                details={"file": str(self.path), "fault": fault},
            )

        try:
            doc = json.loads(self.path.read_bytes())
        except OSError as exc:
            raise storage_error(exc, doing="read") from None
        except (ValueError, UnicodeDecodeError):
            raise damaged("not valid JSON") from None
        if not is_object(doc):
            raise damaged("not a JSON object")
        version = doc.get("schema_version")  # pyright: ignore[reportUnknownMemberType]
        if not isinstance(version, int) or isinstance(version, bool) or version < 1:
            raise damaged("no valid schema_version")
        if version > JOURNAL_SCHEMA_VERSION:
            raise damaged(f"written by a newer mcp-center (schema {version}, this one reads {JOURNAL_SCHEMA_VERSION})")
        files = doc.get("files")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
        if not isinstance(files, list):
            raise damaged("'files' is not a list")
        entries: list[_Entry] = []
        for item in files:  # pyright: ignore[reportUnknownVariableType]
            if not isinstance(item, dict):
                raise damaged("an entry is not an object")
            target, temp = item.get("file"), item.get("temp")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
            sha, size = item.get("sha256"), item.get("size")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
            if not (
                isinstance(target, str)
                and isinstance(temp, str)
                and isinstance(sha, str)
                and isinstance(size, int)
                and _plain_name(target)
                and _plain_name(temp)
                and temp.endswith(".tmp")
            ):
                raise damaged("an entry is malformed")
            entries.append(_Entry(target, temp, sha, size))
        return entries

    def _check(self, entry: _Entry) -> None:
        """The temp (or, once renamed, the target) holds exactly what the journal recorded."""
        temp = self.directory / entry.temp
        present = temp if file_stamp(temp) is not None else self.directory / entry.target
        try:
            data = present.read_bytes()
        except FileNotFoundError:
            data = None
        except OSError as exc:
            raise storage_error(exc, doing="read") from None
        if data is None or len(data) != entry.size or hashlib.sha256(data).hexdigest() != entry.sha256:
            fault = f"{present.name} does not match the journal's checksum"
            logger.error("store.journal_mismatch", extra={"file": str(self.path), "fault": fault})
            raise StorageError(
                f"{self.path} names {entry.target}, but {fault}. Nothing was touched: restore the data "
                "directory from a backup, or move the journal away to drop that change",
                details={"file": str(self.path), "fault": fault},
            )

    def _discard(self, paths: list[Path]) -> None:
        for path in paths:
            try:
                self._disk.unlink(path)
            except OSError:
                logger.warning("store.temp_not_removed", extra={"file": str(path)})


def _plain_name(name: str) -> bool:
    """A file name inside the directory (no separator, not `.`/`..`)."""
    return bool(name) and "/" not in name and "\0" not in name and name not in {".", ".."}
