"""What the compatibility matrix's servers talk to: a local web page, a throwaway PostgreSQL, and
remote MCP servers started on loopback (R-11.3).

Everything binds 127.0.0.1 (or a Unix socket) and is stopped by its context manager, by pid or
process group of the process this module started — never by name.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Generator, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from pathlib import Path

from tests.support.loopback import serve_threaded
from tests.support.ports import wait_for_port

__all__ = ["local_postgres", "page_server", "remote_server"]

PAGE_TEXT = "compat page: served from loopback"
PAGE_HTML = f"<html><head><title>Compat</title></head><body><h1>Compat</h1><p>{PAGE_TEXT}</p></body></html>"


class _Page(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path == "/robots.txt":
            body, kind = b"User-agent: *\nAllow: /\n", "text/plain"
        else:
            body, kind = PAGE_HTML.encode(), "text/html; charset=utf-8"
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        del format, args


@contextmanager
def page_server() -> Generator[str]:
    """A web page on loopback (and an allow-all robots.txt); yields its URL."""
    with serve_threaded(_Page) as base:
        yield f"{base}/page.html"


def _stop(proc: subprocess.Popen[bytes], timeout_s: float = 15.0) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)


@contextmanager
def remote_server(argv: Sequence[str], port: int, env: dict[str, str], log: Path) -> Generator[None]:
    """Start a remote MCP server (its own process group) that listens on `port`; stop its group after."""
    with log.open("ab") as out:
        proc = subprocess.Popen(
            list(argv), env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
        )
    try:
        wait_for_port(port, 240, proc)
        yield
    finally:
        _stop(proc)


@contextmanager
def local_postgres(root: Path) -> Generator[tuple[Path, str]]:
    """A throwaway PostgreSQL listening only on a Unix socket in `root/sock`, with database `compat`.

    It runs as the `postgres` user when we are root (PostgreSQL refuses root). Yields (socket
    directory, connection URL for role `compat`). The table `fruit(name, color)` holds three rows.
    """
    bindir = _postgres_bindir()
    user = "postgres" if os.geteuid() == 0 else None
    if root.exists():
        shutil.rmtree(root)
    data, sock = root / "data", root / "sock"
    sock.mkdir(parents=True)
    for directory in (root, sock):
        directory.chmod(0o755)
    if user is not None:
        shutil.chown(root, user)
        shutil.chown(sock, user)
    subprocess.run(
        [str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres", "--no-sync"],
        check=True,
        capture_output=True,
        user=user,
    )
    options = f"-c listen_addresses='' -c unix_socket_directories={sock} -c fsync=off"
    subprocess.run(
        [str(bindir / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(root / "log"), "-w", "start"],
        check=True,
        capture_output=True,
        user=user,
    )
    try:
        psql = [str(bindir / "psql"), "-h", str(sock), "-U", "postgres", "-v", "ON_ERROR_STOP=1", "-q"]
        subprocess.run([*psql, "-c", "CREATE DATABASE compat"], check=True, capture_output=True)
        setup = (
            "CREATE ROLE compat LOGIN; CREATE TABLE fruit (name text, color text);"
            "INSERT INTO fruit VALUES ('apple','red'),('banana','yellow'),('lime','green');"
            "GRANT SELECT ON fruit TO compat;"
        )
        subprocess.run([*psql, "-d", "compat", "-c", setup], check=True, capture_output=True)
        yield sock, f"postgresql://compat@localhost/compat?host={sock}"
    finally:
        subprocess.run(
            [str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
            check=False,
            capture_output=True,
            user=user,
        )


def _postgres_bindir() -> Path:
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    if not versions:
        sys.exit("compat: the PostgreSQL rows need a PostgreSQL server (apt-get install -y postgresql)")
    return versions[-1].parent
