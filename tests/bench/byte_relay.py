"""The byte relay of the gateway benchmark: the floor of any proxy on this machine (R-8.2, issue 12).

A TCP relay on uvloop that copies bytes between each agent connection and one upstream connection of
its own, in both directions, without parsing anything: no HTTP, no JSON-RPC, no policy. What it adds
to a call is the extra hop itself (two more loopback writes and reads, two more process wake-ups) and
the least Python a relay can run. A gateway's c=1 ratio cannot go below this one's on the same machine;
the difference between the two is the gateway's own work.

Usage: `python -m tests.bench.byte_relay --upstream-port N --port M` (127.0.0.1 only). Not a test.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import cast

import uvloop


class _Pipe(asyncio.Protocol):
    """One side of a relayed connection: what it receives is written to its peer's transport."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.peer: _Pipe | None = None
        self.pending: list[bytes] = []

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast("asyncio.Transport", transport)  # uvloop's TCP transport (no asyncio base)

    def data_received(self, data: bytes) -> None:
        peer = self.peer
        if peer is not None and peer.transport is not None:
            peer.transport.write(data)
        else:
            self.pending.append(data)  # the upstream connection is not made yet

    def connection_lost(self, exc: Exception | None) -> None:
        peer = self.peer
        if peer is not None and peer.transport is not None:
            peer.transport.close()


async def serve(upstream_port: int, port: int) -> None:
    """Relay 127.0.0.1:`port` to 127.0.0.1:`upstream_port` until cancelled."""
    loop = asyncio.get_running_loop()

    def agent_side() -> _Pipe:
        agent = _Pipe()

        async def connect() -> None:
            try:
                _transport, upstream = await loop.create_connection(_Pipe, "127.0.0.1", upstream_port)
            except OSError:
                if agent.transport is not None:
                    agent.transport.close()
                return
            upstream.peer, agent.peer = agent, upstream
            if upstream.transport is not None:
                for chunk in agent.pending:
                    upstream.transport.write(chunk)
            agent.pending.clear()

        loop.create_task(connect())  # noqa: RUF006 - lives as long as the relay; the bench stops the process
        return agent

    server = await loop.create_server(agent_side, "127.0.0.1", port)
    async with server:
        await server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description="The byte relay of the gateway benchmark (loopback only).")
    parser.add_argument("--upstream-port", type=int, required=True)
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    uvloop.run(serve(args.upstream_port, args.port))


if __name__ == "__main__":
    main()
