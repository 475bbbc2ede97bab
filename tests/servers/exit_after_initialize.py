"""A server that answers `initialize`, then dies at its first request: two stderr lines (the second
with an ESC sequence), then exit with code argv[1] (default 4) — a server that "starts" and crashes
once it is asked for something (a missing database, a bad configuration read lazily)."""

from __future__ import annotations

import json
import sys
from typing import Any

if __name__ == "__main__":
    request: dict[str, Any] = json.loads(sys.stdin.readline())
    sys.stderr.write("starting\n")
    sys.stderr.flush()
    answer: dict[str, Any] = {
        "jsonrpc": "2.0",
        "id": request["id"],
        "result": {
            "protocolVersion": request["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "exit-after-initialize", "version": "1.0"},
        },
    }
    sys.stdout.write(json.dumps(answer) + "\n")
    sys.stdout.flush()
    sys.stdin.readline()  # notifications/initialized
    sys.stderr.write("fatal: \x1b[31mdatabase locked\n")
    sys.stderr.flush()
    sys.exit(int(sys.argv[1]) if len(sys.argv) > 1 else 4)
