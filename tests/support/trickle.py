"""A fake `serve` that answers a request with its headers and then one byte at a time, never all of it
(issue 16, F4): every network read gets a byte before a per-read timeout fires, so only a deadline
for the whole answer ends the wait."""

from __future__ import annotations

import socket
import threading
from collections.abc import Generator
from contextlib import contextmanager

__all__ = ["trickling_serve"]

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
def trickling_serve(interval_s: float, give_up_s: float = 15.0) -> Generator[str]:
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
