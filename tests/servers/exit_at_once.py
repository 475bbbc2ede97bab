"""A server that dies before speaking: one line on stderr, then exit with code argv[1] (default 3)."""

from __future__ import annotations

import sys

if __name__ == "__main__":
    sys.stderr.write("fatal: configuration missing\n")
    sys.stderr.flush()
    sys.exit(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
