"""Report how we were started as one JSON-RPC notification on stdout, then wait for stdin EOF.

The notification is `test/started` with params `{"argv": sys.argv[1:], "cwd": ..., "env": {...}}`.
"""

from __future__ import annotations

import json
import os
import sys

if __name__ == "__main__":
    params = {"argv": sys.argv[1:], "cwd": os.getcwd(), "env": dict(os.environ)}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "method": "test/started", "params": params}) + "\n")
    sys.stdout.flush()
    while sys.stdin.buffer.read(65536):
        pass
