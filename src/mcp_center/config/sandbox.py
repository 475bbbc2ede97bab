"""The sandbox policy of a stdio server: how confined its process runs (R-11.1, R-11.2).

A policy is part of the server's configuration (`StdioServerConfig.sandbox`) and of its connection
summary, so changing it is a high-risk change that needs a new confirmation (R-1.4, R-2.1). `None`
means the server runs unconfined, with the rights of the host's user; the `production` profile
refuses that (R-11.2). What the policy turns into on the host (bubblewrap namespaces, mounts,
resource limits) is `transports/sandbox.py`; the threats it stops are listed there.

Threats this module stops: a policy that would hand the server the whole file system or the
kernel's own interfaces (`/`, `/proc`, `/sys`, `/dev` as extra paths), a relative or `..`
path that means something else inside the sandbox than on the trust page, and limits so low
that a server cannot start or so high that they limit nothing. Every rule violation is a
`FieldError` under `sandbox.*`; no rule reads the disk (whether a path exists is a warning on
the trust page and an attributed error at start, because it can change after validation).
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from mcp_center.errors import FieldError

__all__ = [
    "DEFAULT_MAX_OPEN_FILES",
    "DEFAULT_MAX_PROCESSES",
    "DEFAULT_MEMORY_MB",
    "MAX_SANDBOX_PATHS",
    "SANDBOX_RESERVED_PATHS",
    "SandboxNetwork",
    "SandboxPath",
    "SandboxPolicy",
    "check_sandbox",
]

DEFAULT_MEMORY_MB = 4096
"""Default memory limit in MiB (private writable memory, RLIMIT_DATA): room for a Node.js or
Python server and for headless Chromium."""
DEFAULT_MAX_PROCESSES = 256
"""Default limit on processes (and threads) the server may have at once."""
DEFAULT_MAX_OPEN_FILES = 1024
"""Default limit on open file descriptors per process."""
MAX_SANDBOX_PATHS = 64
"""Most extra host paths one policy may bind into the sandbox."""

SANDBOX_RESERVED_PATHS: tuple[str, ...] = ("/", "/proc", "/sys", "/dev")
"""Paths that may not be bound into a sandbox, nor anything below the last three: the whole file
system, or the kernel's interfaces (the sandbox gets its own /proc and a minimal /dev)."""

SandboxNetwork = Literal["none", "egress"]
"""`none`: a network namespace of its own with only a loopback interface (nothing outside, not even
the host's 127.0.0.1). `egress`: the host's network, as an unconfined process has it (package
managers on a cold start, servers that call web APIs); see docs/sandbox.md for what that includes."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SandboxPath(_Model):
    """A host path the sandboxed server may see, bound at the same path inside the sandbox.

    Attributes:
        path: An absolute, normalized host path (a directory or a file).
        writable: False (default) binds it read-only; True lets the server change it.
    """

    path: str
    writable: bool = False


class SandboxPolicy(_Model):
    """How one stdio server is confined (R-11.1); see docs/sandbox.md for the whole picture.

    Every sandboxed server gets read-only system directories, a private writable home and `/tmp`
    (kept between its runs, removed with the server), its own PID namespace and no view of
    mcp-center's data directory. The fields below are what differs between servers.

    Attributes:
        network: See `SandboxNetwork`.
        memory_mb: Private writable memory of each process in MiB (heap and anonymous mappings,
            RLIMIT_DATA); None means no limit. Address-space reservations are not counted (V8
            reserves gigabytes for WebAssembly and Chromium terabytes, untouched), nor is shared
            memory (see docs/sandbox.md).
        max_processes: Processes and threads the server may have at once (RLIMIT_NPROC, counted
            for the sandbox alone; see docs/sandbox.md for how).
        max_open_files: Open file descriptors per process (RLIMIT_NOFILE).
        paths: Extra host paths to show the server (a project directory, a socket directory).
    """

    network: SandboxNetwork = "none"
    memory_mb: int | None = Field(default=DEFAULT_MEMORY_MB, ge=64, le=1024 * 1024)
    max_processes: int = Field(default=DEFAULT_MAX_PROCESSES, ge=8, le=65536)
    max_open_files: int = Field(default=DEFAULT_MAX_OPEN_FILES, ge=32, le=1024 * 1024)
    paths: list[SandboxPath] = Field(default_factory=list[SandboxPath])


def check_sandbox(policy: SandboxPolicy, prefix: str = "sandbox") -> Iterable[FieldError]:
    """Yield the rule violations of `policy` (the field limits are checked by pydantic already).

    Args:
        policy: The parsed policy.
        prefix: The field path of the policy in the configuration.
    Yields:
        `FieldError`s with codes `SANDBOX_PATH_INVALID` (not absolute, not normalized, control
        characters), `SANDBOX_PATH_RESERVED` (see `SANDBOX_RESERVED_PATHS`) and
        `SANDBOX_PATH_DUPLICATE`.
    """
    if len(policy.paths) > MAX_SANDBOX_PATHS:
        yield FieldError(f"{prefix}.paths", "SANDBOX_PATH_INVALID", f"at most {MAX_SANDBOX_PATHS} paths may be listed")
    seen: set[str] = set()
    for i, entry in enumerate(policy.paths):
        field = f"{prefix}.paths.{i}.path"
        path = entry.path
        if not path.startswith("/") or any(ord(c) < 0x20 or c == "\x7f" for c in path) or len(path) > 4096:
            yield FieldError(field, "SANDBOX_PATH_INVALID", "must be an absolute host path without control characters")
            continue
        if posixpath.normpath(path) != path or path.startswith("//"):
            yield FieldError(
                field,
                "SANDBOX_PATH_INVALID",
                f"must be normalized (no '.', '..', '//' or trailing '/'): {posixpath.normpath(path)!r}",
            )
            continue
        if path == "/" or any(path == r or path.startswith(r + "/") for r in SANDBOX_RESERVED_PATHS[1:]):
            yield FieldError(
                field,
                "SANDBOX_PATH_RESERVED",
                "cannot be bound: the sandbox has its own /proc and /dev, and never the whole file system or /sys",
            )
            continue
        if path in seen:
            yield FieldError(field, "SANDBOX_PATH_DUPLICATE", "is listed twice")
        seen.add(path)
