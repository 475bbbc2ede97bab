"""Run a stdio server inside a bubblewrap sandbox (R-11.1, R-11.2; design in docs/sandbox.md).

Threats this module stops, for a server whose configuration has a `SandboxPolicy`:

- **Reading the host's secrets.** The server sees a fresh root file system: read-only system
  directories (`/usr`, `/etc` and the `/bin`, `/lib*` links), a private `/proc` and minimal `/dev`,
  its own home and `/tmp`, and the extra paths its policy names. mcp-center's data directory (key
  file, `secrets.json`, other servers' homes) is never bound; if an extra path contains it, a
  tmpfs hides it. The host's `/etc/passwd` and `/etc/group` are replaced by a two-line pair.
- **Writing outside its home.** Everything but the home, `/tmp` and writable extra paths is
  read-only or absent.
- **Reaching the network or the host's loopback.** `network: none` gives the server a network
  namespace of its own with only `lo`: `127.0.0.1:<serve port>` inside is not the host's.
- **Outliving a stop, or hiding from it.** The server runs in its own PID namespace under
  bubblewrap's init; when bubblewrap dies (our SIGTERM/SIGKILL to its process group, our own
  death through `--die-with-parent`, the watchdog of `guard.py`) the kernel kills every process
  of the namespace, including those that left the process group.
- **Exhausting the host.** `prlimit` sets RLIMIT_NPROC, RLIMIT_NOFILE, RLIMIT_DATA (when
  `memory_mb` is set) and no core dumps, as soft = hard limits the server cannot raise.
  RLIMIT_DATA, not RLIMIT_AS: V8 reserves about 10 GiB of address space per WebAssembly instance
  (Node's own `fetch` uses one) and Chromium a terabyte, never touched, so an address-space limit
  low enough to mean anything breaks them; RLIMIT_DATA counts private writable memory only.
- **Running with root's rights.** When mcp-center runs as root, user namespaces would map the
  server to root (kuid 0: every root-owned file its owner's, RLIMIT_NPROC not enforced). So
  bubblewrap then runs privileged with every capability dropped but the four it needs to enter
  the server's home and change uid (DAC_READ_SEARCH, SETUID, SETGID, SETPCAP), and
  `setpriv` drops to an unprivileged uid of the server's own (`sandbox_uid`), clears the
  bounding set and sets no_new_privs before the server starts. As any other user, bubblewrap
  runs unprivileged in a new user namespace (`--disable-userns` forbids nesting one).

The two host modes are `SandboxSupport.mode` `setuid` (root) and `userns` (any other user). The
probe (`sandbox_support`) names what is missing when neither works: bubblewrap, util-linux's
`prlimit`/`setpriv`, or unprivileged user namespaces.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import posixpath
import resource
import shutil
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Literal

from mcp_center.config.sandbox import SandboxPolicy
from mcp_center.errors import SandboxUnavailable, ServerUnreachable
from mcp_center.models import ErrorReason

__all__ = [
    "OFFLINE_ENV",
    "SANDBOX_ENV_VARS",
    "SANDBOX_HOME",
    "SANDBOX_TMP",
    "SANDBOX_UID_BASE",
    "SANDBOX_USER",
    "SYSTEM_DIRS",
    "TLS_TRUST_ENV_VARS",
    "SandboxLaunch",
    "SandboxSpec",
    "SandboxSupport",
    "build_sandbox_argv",
    "prepare_launch",
    "probe_sandbox",
    "remove_sandbox_dir",
    "sandbox_environment",
    "sandbox_support",
    "sandbox_uid",
    "userns_disabled",
    "visible_in_sandbox",
]

SANDBOX_HOME: Final = "/home/mcp"
"""The server's home inside the sandbox (its working directory unless `cwd` is set)."""
SANDBOX_TMP: Final = "/tmp"  # noqa: S108 - the sandbox's own /tmp, bound to a private host directory
"""The server's private /tmp inside the sandbox."""
SANDBOX_USER: Final = "mcp"
"""The user name the sandbox's own /etc/passwd gives the server's uid."""
SANDBOX_UID_BASE: Final = 0x7A000000
"""Root hosts: servers run as uid `SANDBOX_UID_BASE + n`, n in [0, 65536) from the server id. The
range lies in what systemd documents as unused (0x70000000-0x7FFFFFFF), away from users, system
services and container ranges."""
SANDBOX_UID_COUNT: Final = 65536

SYSTEM_DIRS: Final = ("/usr", "/etc")
"""Bound read-only into every sandbox; `/bin`, `/sbin`, `/lib*` follow the host (links or binds)."""
_LINKABLE: Final = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")

TLS_TRUST_ENV_VARS: Final = (
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
)
"""Where the host's trusted CA certificates live: paths to public certificates, not secrets.
Without them `uvx`/`npx` servers fail TLS (UnknownIssuer) on hosts behind an intercepting proxy.
(Defined here, used by `stdio.child_environment` too.)"""

SANDBOX_ENV_VARS: Final = ("PATH", "LANG", "LC_ALL", "TERM", *TLS_TRUST_ENV_VARS)
"""Host variables a sandboxed server inherits (PATH as `host_path()` builds it; the CA bundle
paths, which work when they point into /etc or /usr). Unlike unconfined servers it does not get
the host's HOME, USER, LOGNAME, SHELL or TMPDIR (they would name host paths): those are set to
the sandbox's own values."""
OFFLINE_ENV: Final = {"npm_config_offline": "true", "UV_OFFLINE": "1"}
"""Set for `network: none` (unless the server's env sets them): npx and uvx use what the warm-up
put into the home's caches instead of retrying a registry they cannot reach for minutes."""

_PROBE_TIMEOUT_S: Final = 20.0
_FAILED_PROBE_TTL_S: Final = 10.0
"""A failed host check is retried after this many seconds (an admin may install bubblewrap)."""


@dataclass(frozen=True)
class SandboxSpec:
    """One server's sandbox as the transport applies it (built by the service from the policy).

    Attributes:
        server_id: The server's id (with `stamp`, names its uid on root hosts).
        policy: The confirmed policy (part of the digest, R-2.1).
        root: The host directory holding the server's `home/` and `tmp/` (kept between runs,
            removed with the server).
        hidden: Host paths the server must never see (mcp-center's data directory).
        stamp: The server's creation stamp (`service.sandboxing.home_key`): a server added again
            under its id gets another uid. "" (tests, benchmarks): the uid of the id alone.
    """

    server_id: str
    policy: SandboxPolicy
    root: Path
    hidden: tuple[str, ...] = ()
    stamp: str = ""

    @property
    def home_dir(self) -> Path:
        """The host directory bound at `SANDBOX_HOME`."""
        return self.root / "home"

    @property
    def tmp_dir(self) -> Path:
        """The host directory bound at `/tmp`."""
        return self.root / "tmp"


@dataclass(frozen=True)
class SandboxSupport:
    """What this host can do (`sandbox_support()`).

    Attributes:
        mode: `setuid` (mcp-center runs as root: privileged bubblewrap, then `setpriv` to the
            server's own uid) or `userns` (an unprivileged user namespace).
        bwrap: bubblewrap's absolute path, or None.
        prlimit / setpriv: util-linux's tools inside the sandbox (system paths), or None.
        missing: None when sandboxes work; else what is missing: `bubblewrap`, `util-linux`,
            `user_namespaces`, `linux` or `bubblewrap_failed`.
        message: What to do about it, for an error message.
    """

    mode: Literal["setuid", "userns"]
    bwrap: str | None
    prlimit: str | None
    setpriv: str | None
    missing: str | None = None
    message: str | None = None

    @property
    def available(self) -> bool:
        """True when sandboxed servers can start on this host."""
        return self.missing is None

    def require(self) -> None:
        """Raise `SandboxUnavailable` naming what is missing, unless sandboxes work."""
        if self.missing is not None:
            raise SandboxUnavailable(
                f"stdio servers cannot run sandboxed on this host: {self.message}",
                details={"reason": ErrorReason.SANDBOX_UNAVAILABLE.value, "missing": self.missing},
            )


@dataclass
class SandboxLaunch:
    """A prepared spawn: the argv to exec, the descriptors it needs, and their cleanup.

    Attributes:
        argv: bubblewrap's command line, ending with the server's argv.
        pass_fds: Descriptors the child must inherit (the sandbox's /etc/passwd and /etc/group).
    """

    argv: list[str]
    pass_fds: tuple[int, ...] = ()
    _close: list[int] = field(default_factory=list[int])

    def close(self) -> None:
        """Close the descriptors (after the spawn, or when it failed)."""
        for fd in self._close:
            with contextlib.suppress(OSError):
                os.close(fd)
        self._close.clear()


def sandbox_uid(server_id: str, stamp: str = "") -> int:
    """The unprivileged uid (and gid) a sandboxed server runs as on a root host (R-11.1).

    Args:
        server_id: The server's id.
        stamp: Its creation stamp (`service.sandboxing.home_key`): the same on every instance (the
            record is shared), another one for a server deleted and added again under the id, so
            what the old one left in its writable `paths` belongs to a uid the new one is not. ""
            gives the uid of the id alone, what every server ran as before the stamp counted
            (`_adopt` takes its files over).
    Returns:
        `SANDBOX_UID_BASE + n`, n in [0, `SANDBOX_UID_COUNT`) from a hash: two servers can share
        a uid (one chance in 65536 per pair), as before.
    """
    key = server_id if not stamp else f"{server_id}\0{stamp}"
    n = int.from_bytes(hashlib.sha256(key.encode("utf-8")).digest()[:2], "big")
    return SANDBOX_UID_BASE + n % SANDBOX_UID_COUNT


def _host_mode() -> Literal["setuid", "userns"]:
    return "setuid" if os.geteuid() == 0 else "userns"


def _system_tool(name: str) -> str | None:
    """`name` in a system directory the sandbox binds (so the same path works inside)."""
    for directory in ("/usr/bin", "/usr/sbin", "/bin", "/sbin"):
        candidate = os.path.join(directory, name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


BWRAP_CANDIDATES: Final = ("/usr/bin/bwrap", "/usr/local/bin/bwrap", "/bin/bwrap")
"""Where bubblewrap is looked for first (then on PATH): a system path, because on a root host it
runs with root's rights."""


def _find_bwrap(candidates: Sequence[str], search_path: bool) -> str | None:
    for candidate in candidates:
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which("bwrap") if search_path else None
    return os.path.abspath(found) if found else None


_support_lock = threading.Lock()
_support: tuple[float, SandboxSupport] | None = None


def sandbox_support(*, refresh: bool = False) -> SandboxSupport:
    """Check once whether sandboxes work here (a trial sandbox runs `true`); cached.

    A working host is cached for the life of the process, a failing one for 10 s. Blocking (up
    to about 20 s on a hung system, normally 10-30 ms): call it through `anyio.to_thread.run_sync`.

    Args:
        refresh: Check again now.
    Returns:
        The host's `SandboxSupport` (never raises).
    """
    global _support
    with _support_lock:
        now = time.monotonic()
        if not refresh and _support is not None:
            checked_at, cached = _support
            if cached.available or now - checked_at < _FAILED_PROBE_TTL_S:
                return cached
        result = probe_sandbox()
        _support = (now, result)
        return result


def probe_sandbox(
    *,
    bwrap_candidates: Sequence[str] = BWRAP_CANDIDATES,
    search_path: bool = True,
    proc_sys: Path = Path("/proc/sys"),
) -> SandboxSupport:
    """Check this host now, uncached (see `sandbox_support`); blocking, never raises.

    Args:
        bwrap_candidates: Absolute paths tried for bubblewrap before PATH.
        search_path: Also look for `bwrap` on PATH.
        proc_sys: Where the kernel's sysctls are read (`user/max_user_namespaces`,
            `kernel/unprivileged_userns_clone`).
    """
    mode = _host_mode()
    bwrap = _find_bwrap(bwrap_candidates, search_path)
    prlimit, setpriv = _system_tool("prlimit"), _system_tool("setpriv")

    def missing(what: str, message: str) -> SandboxSupport:
        return SandboxSupport(mode, bwrap, prlimit, setpriv, missing=what, message=message)

    if not sys.platform.startswith("linux"):
        return missing("linux", "the sandbox needs Linux namespaces (bubblewrap)")
    if bwrap is None:
        return missing("bubblewrap", "bubblewrap is not installed (Debian/Ubuntu: apt-get install bubblewrap)")
    if prlimit is None or (mode == "setuid" and setpriv is None):
        return missing(
            "util-linux", "util-linux's prlimit and setpriv are not in /usr/bin (apt-get install util-linux)"
        )
    if mode == "userns":
        why = userns_disabled(proc_sys)
        if why is not None:
            return missing("user_namespaces", why)
    true = _system_tool("true") or "/usr/bin/true"
    argv = [bwrap, *_namespace_args(mode, network="none"), *_base_mounts()]
    argv += ["--", *_limit_prefix(mode, 0, prlimit, setpriv, max_processes=64, max_open_files=64, memory_mb=None), true]
    try:
        done = subprocess.run(  # noqa: S603 - fixed argv of system tools, no shell
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            timeout=_PROBE_TIMEOUT_S,
            env={"PATH": "/usr/bin:/bin"},
            cwd="/",
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return missing("bubblewrap_failed", f"a trial sandbox could not start ({type(exc).__name__})")
    if done.returncode == 0:
        return SandboxSupport(mode, bwrap, prlimit, setpriv)
    said = done.stderr.decode("utf-8", "replace").strip().splitlines()
    first = said[0][:300] if said else f"exit code {done.returncode}"
    if "namespace" in first.lower() or "operation not permitted" in first.lower():
        return missing(
            "user_namespaces",
            f"bubblewrap cannot create namespaces here ({first}); allow unprivileged user namespaces "
            "(sysctl kernel.unprivileged_userns_clone=1, or an AppArmor profile for bwrap) or run in a "
            "container that permits them",
        )
    return missing("bubblewrap_failed", f"a trial sandbox failed: {first}")


def userns_disabled(proc_sys: Path = Path("/proc/sys")) -> str | None:
    """Why this kernel refuses unprivileged user namespaces, read from sysctls under `proc_sys`;
    None if it does not (a security module may still refuse: the trial sandbox finds that)."""
    checks = (
        ("user/max_user_namespaces", "0", "user.max_user_namespaces is 0"),
        ("kernel/unprivileged_userns_clone", "0", "kernel.unprivileged_userns_clone is 0"),
    )
    for path, bad, why in checks:
        try:
            value = (proc_sys / path).read_text().strip()
        except OSError:
            continue
        if value == bad:
            return f"unprivileged user namespaces are disabled ({why}; set it to 1 or more)"
    return None


def _namespace_args(mode: str, *, network: str) -> list[str]:
    args = ["--die-with-parent", "--unshare-ipc", "--unshare-pid", "--unshare-uts", "--unshare-cgroup-try"]
    args += ["--hostname", "mcp-sandbox"]
    if network == "none":
        args.append("--unshare-net")
    if mode == "userns":
        args += ["--unshare-user", "--disable-userns"]
    else:
        # Privileged bubblewrap keeps every capability unless told otherwise: keep only what
        # bubblewrap needs to enter the server's home (owned by its uid, mode 0700) and setpriv
        # needs to become that uid; setpriv clears them all on the way.
        args += ["--cap-drop", "ALL", "--cap-add", "CAP_DAC_READ_SEARCH", "--cap-add", "CAP_SETUID"]
        args += ["--cap-add", "CAP_SETGID", "--cap-add", "CAP_SETPCAP"]
    return args


def _base_mounts() -> list[str]:
    args: list[str] = []
    for directory in SYSTEM_DIRS:
        args += ["--ro-bind", directory, directory]
    for link in _LINKABLE:
        if os.path.islink(link):
            args += ["--symlink", os.readlink(link), link]
        elif os.path.isdir(link):
            args += ["--ro-bind", link, link]
    args += ["--proc", "/proc", "--dev", "/dev"]
    return args


def _limit_prefix(
    mode: str,
    uid: int,
    prlimit: str | None,
    setpriv: str | None,
    *,
    max_processes: int,
    max_open_files: int,
    memory_mb: int | None,
) -> list[str]:
    """The commands between bubblewrap and the server: drop to `uid` (root hosts), then set limits."""
    prefix: list[str] = []
    if mode == "setuid":
        assert setpriv is not None
        prefix += [setpriv, f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--inh-caps=-all"]
        prefix += ["--bounding-set=-all", "--no-new-privs", "--"]
    assert prlimit is not None
    limits = [
        f"--nproc={_clamp(resource.RLIMIT_NPROC, max_processes)}",
        f"--nofile={_clamp(resource.RLIMIT_NOFILE, max_open_files)}",
        "--core=0",
    ]
    if memory_mb is not None:
        limits.append(f"--data={_clamp(resource.RLIMIT_DATA, memory_mb * 1024 * 1024)}")
    return [*prefix, prlimit, *limits, "--"]


def _clamp(which: int, wanted: int) -> int:
    """`wanted`, lowered to this process's hard limit (raising it would need CAP_SYS_RESOURCE)."""
    _, hard = resource.getrlimit(which)
    return wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)


def visible_in_sandbox(path: str, policy: SandboxPolicy, *, own_dirs: bool = False) -> bool:
    """True when host `path` (absolute) exists at the same path inside a sandbox with `policy`.

    System directories, mcp-center's own bin directory (`uv`/`uvx` for the stdio template) and the
    policy's paths are visible; nothing else of the host is. With `own_dirs` (for a working
    directory, which names a place inside), the sandbox's own home and /tmp count too.
    """
    roots = [*_system_roots(), _own_bin(), *(entry.path for entry in policy.paths)]
    if own_dirs:
        roots += [SANDBOX_HOME, SANDBOX_TMP]
    return any(_within(path, root) for root in roots)


def _system_roots() -> list[str]:
    """Host paths every sandbox shows at the same path: `SYSTEM_DIRS` and the host's /bin, /lib*."""
    return [*SYSTEM_DIRS, *(link for link in _LINKABLE if os.path.islink(link) or os.path.isdir(link))]


def _own_bin() -> str:
    return os.path.dirname(os.path.abspath(sys.executable))


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def build_sandbox_argv(
    spec: SandboxSpec,
    argv: Sequence[str],
    *,
    cwd: str | None,
    support: SandboxSupport,
    passwd_fd: int,
    group_fd: int,
) -> list[str]:
    """bubblewrap's command line for `argv` under `spec` (no I/O beyond reading host links).

    Mount order: system directories, /proc, /dev, the home and /tmp, the policy's paths (parents
    first, each one's missing parent directories created world-traversable), then a tmpfs over
    every hidden path a bind would otherwise show, then the sandbox's /etc/passwd and /etc/group.

    Args:
        spec: The server's sandbox.
        argv: The server's command (absolute program path first) and arguments.
        cwd: The server's working directory (must be visible), or None for its home.
        support: The host's mode and tools (`sandbox_support()`), available.
        passwd_fd / group_fd: Readable descriptors with the sandbox's /etc/passwd and /etc/group.
    Returns:
        The full argv (bubblewrap first, the server's argv last).
    """
    assert support.bwrap is not None
    policy = spec.policy
    args = [support.bwrap, *_namespace_args(support.mode, network=policy.network), *_base_mounts()]
    same_path = _system_roots()  # host paths bound at the same path inside (they exist in there)
    made: set[str] = set()

    def ensure_parents(target: str) -> None:
        """Create the missing parents of a mount point world-traversable (bubblewrap makes them 0700)."""
        chain: list[str] = []
        parent = posixpath.dirname(target)
        while parent not in ("/", "") and parent not in made and not any(_within(parent, r) for r in same_path):
            chain.append(parent)
            parent = posixpath.dirname(parent)
        for directory in reversed(chain):
            args.extend(["--perms", "0755", "--dir", directory])
            made.add(directory)

    ensure_parents(SANDBOX_HOME)
    args += ["--bind", str(spec.home_dir), SANDBOX_HOME, "--bind", str(spec.tmp_dir), SANDBOX_TMP]
    made.update((SANDBOX_HOME, SANDBOX_TMP))
    own_bin = _own_bin()
    extra = [] if any(_within(own_bin, root) for root in same_path) else [(own_bin, False)]
    extra += [(entry.path, entry.writable) for entry in policy.paths]
    for path, writable in sorted(extra, key=lambda item: (item[0].count("/"), item[0])):
        ensure_parents(path)
        args += ["--bind" if writable else "--ro-bind", path, path]
        same_path.append(path)
    for hidden in spec.hidden:
        if any(_within(hidden, source) for source in same_path):
            args += ["--tmpfs", hidden]
    args += ["--ro-bind-data", str(passwd_fd), "/etc/passwd", "--ro-bind-data", str(group_fd), "/etc/group"]
    args += ["--chdir", cwd or SANDBOX_HOME, "--"]
    uid = sandbox_uid(spec.server_id, spec.stamp) if support.mode == "setuid" else os.getuid()
    args += _limit_prefix(
        support.mode,
        uid,
        support.prlimit,
        support.setpriv,
        max_processes=policy.max_processes,
        max_open_files=policy.max_open_files,
        memory_mb=policy.memory_mb,
    )
    return [*args, *argv]


def sandbox_environment(
    base: Mapping[str, str], configured: Mapping[str, str], policy: SandboxPolicy
) -> dict[str, str]:
    """The environment of a sandboxed server.

    `SANDBOX_ENV_VARS` from `base` (the unconfined child environment, see `child_environment`),
    then HOME, USER, LOGNAME, SHELL and TMPDIR of the sandbox, `OFFLINE_ENV` for `network: none`,
    then the server's `configured` env, which wins over all of it.
    """
    env = {name: base[name] for name in SANDBOX_ENV_VARS if name in base}
    env.update(HOME=SANDBOX_HOME, USER=SANDBOX_USER, LOGNAME=SANDBOX_USER, SHELL="/bin/sh", TMPDIR=SANDBOX_TMP)
    if policy.network == "none":
        env.update(OFFLINE_ENV)
    env.update(configured)
    return env


def prepare_launch(spec: SandboxSpec, argv: Sequence[str], *, cwd: str | None) -> SandboxLaunch:
    """Check the host, create the home and /tmp, and build the launch (blocking: run in a thread).

    Raises:
        SandboxUnavailable: bubblewrap, util-linux or user namespaces are missing (`details.missing`).
        ServerUnreachable: reason `spawn_failed`: the command, the working directory or an extra
            path is not visible inside the sandbox, or an extra path does not exist on the host
            (`details.sandbox_path`); the homes cannot be created.
    """
    support = sandbox_support()
    support.require()
    program = argv[0]
    if not visible_in_sandbox(program, spec.policy):
        raise _setup_failure(
            f"the command {program!r} is not visible inside the sandbox: add its directory to sandbox.paths",
            program,
        )
    if cwd is not None and not visible_in_sandbox(cwd, spec.policy, own_dirs=True):
        raise _setup_failure(
            f"the working directory {cwd!r} is not visible inside the sandbox: add it to sandbox.paths", cwd
        )
    for entry in spec.policy.paths:
        if not os.path.exists(entry.path):
            raise _setup_failure(f"sandbox path {entry.path!r} does not exist on the host", entry.path)
    uid = sandbox_uid(spec.server_id, spec.stamp) if support.mode == "setuid" else os.getuid()
    gid = uid if support.mode == "setuid" else os.getgid()
    try:
        previous = _make_dirs(spec, uid, gid)
        legacy = sandbox_uid(spec.server_id)
        if support.mode == "setuid" and previous == legacy != uid:
            _adopt(spec, legacy, uid)
    except OSError as exc:
        raise _setup_failure(f"cannot create the sandbox home ({exc.strerror})", str(spec.root)) from exc
    passwd = f"root:x:0:0::/root:/usr/sbin/nologin\n{SANDBOX_USER}:x:{uid}:{gid}::{SANDBOX_HOME}:/bin/sh\n"
    passwd += "nobody:x:65534:65534::/nonexistent:/usr/sbin/nologin\n"
    group = f"root:x:0:\n{SANDBOX_USER}:x:{gid}:\nnogroup:x:65534:\n"
    fds = [_data_fd("passwd", passwd), _data_fd("group", group)]
    launch = SandboxLaunch([], tuple(fds), fds)
    try:
        launch.argv = build_sandbox_argv(spec, argv, cwd=cwd, support=support, passwd_fd=fds[0], group_fd=fds[1])
    except BaseException:
        launch.close()
        raise
    return launch


def _data_fd(name: str, text: str) -> int:
    fd = os.memfd_create(f"mcp-sandbox-{name}", os.MFD_CLOEXEC)
    try:
        os.write(fd, text.encode("utf-8"))
        os.lseek(fd, 0, os.SEEK_SET)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _make_dirs(spec: SandboxSpec, uid: int, gid: int) -> int | None:
    """Create `<root>/home` and `<root>/tmp` (mode 0700, owned by the server's uid); parents 0700.

    A home or /tmp owned by another uid (its server ran as another one: before the creation stamp
    counted in `sandbox_uid`, or before mcp-center ran as root) is given to `uid` whole, its files
    included, so the server reads and writes what it left there.

    Returns:
        The uid the home belonged to when it was not `uid`, else None.
    Raises:
        OSError: a directory could not be made or given.
    """
    spec.root.mkdir(mode=0o700, parents=True, exist_ok=True)
    previous: int | None = None
    for directory in (spec.home_dir, spec.tmp_dir):
        with contextlib.suppress(FileExistsError):
            directory.mkdir(mode=0o700)
        info = directory.lstat()
        if not stat.S_ISDIR(info.st_mode):
            raise OSError(errno.ENOTDIR, "not a directory", str(directory))
        if (info.st_uid, info.st_gid) != (uid, gid):
            if directory == spec.home_dir and info.st_uid != uid:
                previous = info.st_uid
            _chown_tree(directory, uid, gid, only=None)
    return previous


def _chown_tree(top: Path, uid: int, gid: int, *, only: int | None) -> None:
    """Give `top` and everything below it to `uid`:`gid` (`only`: just what `only` owns); symbolic
    links are changed themselves, never followed."""
    entries = [str(top)]
    for parent, dirs, files in os.walk(top):
        entries += [os.path.join(parent, name) for name in (*dirs, *files)]
    for entry in entries:
        info = os.lstat(entry)
        if only is not None and info.st_uid != only:
            continue
        if (info.st_uid, info.st_gid) != (uid, gid):
            os.chown(entry, uid, gid if only is None or info.st_gid == only else -1, follow_symlinks=False)


def _adopt(spec: SandboxSpec, legacy: int, uid: int) -> None:
    """The server's first start with its stamped uid on a home of its id-only uid (an upgrade,
    root hosts): what that uid owns in the server's writable `paths` is given to `uid` too, so
    the server keeps writing what it wrote there (docs/sandbox.md, R-11.1). Paths below a hidden
    one (the data directory) are left alone."""
    for entry in spec.policy.paths:
        if entry.writable and os.path.exists(entry.path) and not any(_within(entry.path, h) for h in spec.hidden):
            _chown_tree(Path(entry.path), uid, uid, only=legacy)


def remove_sandbox_dir(root: Path) -> None:
    """Delete a server's sandbox directory (home and /tmp); blocking. Missing is fine.

    Files the server made unreadable (a directory with mode 000) are made writable and removed;
    symbolic links are removed, never followed.

    Raises:
        OSError: something could not be removed.
    """

    def retry(func: object, path: str, exc_info: tuple[type[BaseException], BaseException, object]) -> None:
        del func
        if isinstance(exc_info[1], FileNotFoundError):
            return
        os.chmod(os.path.dirname(path), 0o700)
        if os.path.isdir(path) and not os.path.islink(path):
            os.chmod(path, 0o700)
            shutil.rmtree(path)
        else:
            os.unlink(path)

    if root.exists() or root.is_symlink():
        shutil.rmtree(root, onerror=retry)


def _setup_failure(message: str, path: str) -> ServerUnreachable:
    return ServerUnreachable(
        message,
        details={"reason": ErrorReason.SPAWN_FAILED.value, "sandbox_path": path},
    )
