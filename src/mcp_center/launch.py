"""What `serve` does before it builds the host: bind the port (`listen`), own the data directory
(`own_data_dir`) and open the store (`open_store`) (R-7.3, R-9.1, R-9.2, R-9.3, R-10.1).

Each step can refuse a start (a busy port, a data directory another serve owns, a damaged data
file, an unreachable or newer database), and a refused start must touch nothing. They need only
the standard library, the store and the transports' process guard, so `serve` runs them before it
imports the host (`mcp_center.app`: the SDK, fastapi, the service; about 2 s of CPU): a refused
start ends in a fraction of that (issue 16). `mcp_center.app` re-exports these names.
"""

from __future__ import annotations

import errno
import socket
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mcp_center.config import Settings
from mcp_center.errors import AddressInUse, AddressUnavailable
from mcp_center.store.owner import FileOwnerLock, OwnerLock, ServeOwner
from mcp_center.transports.guard import PROCESS_GROUPS_FILE, TakeOver, process_guard

if TYPE_CHECKING:
    from mcp_center.store.json_store import Store

__all__ = [
    "LISTEN_BACKLOG",
    "Ownership",
    "check_instance_name",
    "check_secret_key",
    "listen",
    "open_store",
    "own_data_dir",
    "without_pydantic_v1",
]

LISTEN_BACKLOG = 2048
"""Pending connections the listening sockets queue (uvicorn's default)."""


def listen(host: str, port: int) -> list[socket.socket]:
    """Bind and listen on `host:port` now, before anything of the host starts (R-7.3).

    `serve` calls this first and hands the sockets to uvicorn (`HostServer.run(sockets=...)`), so a
    second `serve` on a busy port fails before it prints its banner, opens the data directory or
    starts a server connection — the running instance's data is never touched. The sockets are
    bound as uvicorn (asyncio's `create_server`) would bind them: every address `host` resolves to
    (`localhost` is IPv4 and IPv6), `SO_REUSEADDR` (a just-stopped server's port is free at once;
    a port another process *listens* on still fails), IPv6 sockets IPv6-only.

    Args:
        host: Bind address or name (`127.0.0.1`, `::1`, `localhost`, `0.0.0.0`).
        port: TCP port; 0 picks a free one (then every address gets the port the first one got).
    Returns:
        Listening sockets, at least one; the caller closes them (uvicorn does when it stops).
    Raises:
        AddressInUse: another process listens on `host:port` (`details`: host, port).
        AddressUnavailable: `host` does not resolve to a local address, the port is privileged,
            or binding failed for another reason (`details`: host, port, reason).
    """
    host = host.strip("[]")  # "[::1]" and "::1" alike
    where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise AddressUnavailable(
            f"cannot listen on {where}: the host name does not resolve ({exc.strerror}); pass an address with --host",
            details={"host": host, "port": port, "reason": "unresolved"},
        ) from None
    sockets: list[socket.socket] = []
    try:
        for family, kind, proto, _name, address in dict.fromkeys(infos):
            sock = socket.socket(family, kind, proto)
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            if port == 0 and len(sockets) > 1:
                address = (address[0], sockets[0].getsockname()[1], *address[2:])
            sock.bind(address)
            sock.listen(LISTEN_BACKLOG)
    except OSError as exc:
        for sock in sockets:
            sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise AddressInUse(
                f"{where} is already in use (another mcp-center serve, or another program, listens there); "
                "stop it, or choose another port with --port",
                details={"host": host, "port": port},
            ) from None
        raise AddressUnavailable(
            f"cannot listen on {where}: {exc.strerror or exc}; choose another --host or --port",
            details={"host": host, "port": port, "reason": errno.errorcode.get(exc.errno or 0, "OSError")},
        ) from None
    return sockets


@dataclass
class Ownership:
    """This process owns a data directory (R-9.2); see `own_data_dir`.

    Attributes:
        lock: The owner lock: `HostServer` announces the URL through it.
        reaped: What the previous owner's record left running and this start stopped (R-9.3).
    """

    lock: OwnerLock
    reaped: TakeOver

    def release(self) -> None:
        """Give the data directory up: end the record of process groups, then the lock. Never raises.

        Call it last, after every server process stopped (the next owner would otherwise find
        this serve's live groups in the record).
        """
        process_guard().stop_recording()
        self.lock.release()


def own_data_dir(settings: Settings) -> Ownership:
    """Claim `settings.data_dir` for this process, right after `serve` bound its port (R-9.2, R-9.3).

    Then stop what a previous owner that crashed left running (the groups its
    `process-groups.json` names and that are provably still its own), start this process's
    watchdog, and record the groups this process starts from now on. Blocking: a few ms, plus at
    most about `settings.stop_grace_s` + 2 s when leftovers resist SIGTERM.

    Returns:
        The ownership; `release()` it when the host has stopped.
    Raises:
        DataDirInUse: a live serve owns the directory (its pid and URL in the message and details);
            nothing in the directory was touched.
        DatabaseRequired: this serve has no database, but a database-backed serve ran on the
            directory (`store.owner.DATABASE_FILE`); nothing was touched.
        StorageError: the directory cannot be created or written.
    """
    lock = FileOwnerLock(settings.data_dir)
    lock.claim(ServeOwner.this_process(database=settings.database_display))
    try:
        guard = process_guard()
        guard.set_grace(settings.stop_grace_s)
        reaped = guard.take_over(settings.data_dir / PROCESS_GROUPS_FILE)
        guard.start()
    except BaseException:
        lock.release()
        raise
    return Ownership(lock=lock, reaped=reaped)


def open_store(settings: Settings) -> Store:
    """The store of `settings`, opened: the files' store completes an interrupted commit, removes
    temps and checks every file; the database's connects, migrates and checks every row (R-9.1,
    R-10.1). The data directory is created (mode 0700) before the files' store makes `mcp/` in it.

    Returns:
        The open store; the caller closes it (`create_app` hands it to the host's lifespan).
    Raises:
        StorageError: a data file is damaged, truncated or of a newer schema: the message names the
            file and the fault; nothing was written.
        StorageUnavailable: the database (`--database-url`) cannot be reached; nothing was created.
        StorageSchemaTooNew: the database was migrated by a newer mcp-center.
    """
    from mcp_center.store.backends import store_for  # the records' models: not for a refused port

    store = store_for(settings)
    if not settings.database_url:  # the files live in it: made private before the store makes mcp/
        settings.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    store.open()
    return store


def check_secret_key(settings: Settings, store: Store) -> None:
    """Refuse, before `serve` prints where it listens, a secret key that is not the one the store's
    ciphertexts were sealed with (trial35 MED 2, R-10.1, R-7.3): the host's start-up checks the same
    later, where a refusal was a traceback after the banner. The first instance on a store records its
    key's check here (the host's start-up then finds it recorded).

    Raises:
        SecretKeyMismatch: another key sealed the store's data, or an env key differs from the key
            file (`service.master_key.checked_key`; nothing was written to the store).
        SecretStoreError: the key (`MCP_CENTER_SECRET_KEY` or the key file) cannot be used.
    """
    from mcp_center.service.master_key import checked_key

    settings.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    checked_key(settings, store)


def check_instance_name(settings: Settings, store: Store) -> None:
    """Refuse, before `serve` prints where it listens, an instance name a live instance on the store
    already has (R-10.2): one error line, exit 4. The host's start-up claims the name atomically once
    it joined (two instances starting at once with one name: the second claim is refused there).

    Raises:
        InstanceNameInUse: naming the live one (`service.instance_names.refuse_a_taken_name`).
        StorageError: the store could not be read.
    """
    from mcp_center.service.instance_names import refuse_a_taken_name

    refuse_a_taken_name(store, settings.instance_label)


def without_pydantic_v1() -> None:
    """Make `pydantic.v1` unimportable in this process, unless something imported it already (R-8.3).

    FastAPI asks of every route's parameter and response model, and of every value it encodes,
    whether it is a pydantic v1 model, and imports `pydantic.v1` to find out (about 1.4 MB of an
    idle host's memory). The host has no v1 model; with the module marked missing in `sys.modules`,
    FastAPI's check takes its "no pydantic.v1" branch and answers no. `serve` calls this before it
    builds the app (its process runs only the host); a library user's process is left as it is.
    """
    # A None entry is the import system's "not importable" mark (typeshed types the values as modules).
    sys.modules.setdefault("pydantic.v1", None)  # pyright: ignore[reportArgumentType]
