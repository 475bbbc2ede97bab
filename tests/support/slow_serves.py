"""Fake `serve`s that never give a whole answer, for the CLI's bounded waits (issue 16, F4, F7).

`silent_serve`: a loopback socket listened on and never read (a stopped or hung serve).
`trickling_serve`: headers, then one byte at a time, never all of it: every network read gets a byte
before a per-read timeout fires, so only a deadline for the whole answer ends the wait."""

from __future__ import annotations

import socket
import threading
from collections.abc import Generator
from contextlib import contextmanager

__all__ = ["SLOW_SERVES", "silent_serve", "trickling_serve"]

_HEADERS = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n"


def _answer(connection: socket.socket, stop: threading.Event, interval_s: float) -> None:
    """Read the request, send the headers, then one space every `interval_s` until `stop`."""
    with connection:
        try:
            connection.recv(65536)
            connection.sendall(_HEADERS)
            while not stop.wait(interval_s):
                connection.sendall(b" ")
        except OSError:  # the client went away
            return


@contextmanager
def silent_serve() -> Generator[str]:
    """Listen on a loopback port and never read; yield its `http://127.0.0.1:<port>` URL."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)  # the kernel completes connections; nothing ever reads them
        yield f"http://127.0.0.1:{silent.getsockname()[1]}"


@contextmanager
def trickling_serve(interval_s: float = 0.1, give_up_s: float = 15.0) -> Generator[str]:
    """Listen on a loopback port; yield its `http://127.0.0.1:<port>` URL.

    Args:
        interval_s: Seconds between two bytes of an answer (shorter than the client's read timeout).
        give_up_s: Seconds after which every answer is cut (connections closed), so that a client
            without an overall deadline fails its test instead of hanging it.
    """
    stop = threading.Event()
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.05)
    workers: list[threading.Thread] = []

    def accept() -> None:
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            connection.settimeout(None)
            worker = threading.Thread(target=_answer, args=(connection, stop, interval_s), daemon=True)
            worker.start()
            workers.append(worker)

    acceptor = threading.Thread(target=accept, daemon=True)
    acceptor.start()
    timer = threading.Timer(give_up_s, stop.set)
    timer.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        timer.cancel()
        stop.set()
        acceptor.join()
        listener.close()
        for worker in workers:
            worker.join()


SLOW_SERVES = {"silent": silent_serve, "trickling": trickling_serve}
"""The fakes by name, for a test parametrized over both (a trickle's byte comes every 0.1 s)."""
