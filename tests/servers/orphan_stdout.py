"""Start `sleep 300` that inherits our stdout, announce its pid, and exit 0 at once.

The announcement is the notification `test/grandchild` with params `{"pid": ...}`. Afterwards the
grandchild keeps the stdout pipe open although the leader is gone.
"""

from __future__ import annotations

import json
import subprocess
import sys

if __name__ == "__main__":
    child = subprocess.Popen(["sleep", "300"], stdin=subprocess.DEVNULL)
    message = {"jsonrpc": "2.0", "method": "test/grandchild", "params": {"pid": child.pid}}
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()
    sys.exit(0)
