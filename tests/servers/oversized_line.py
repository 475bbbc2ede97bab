"""Write one stdout line of argv[1] bytes, then a valid `test/after` notification; wait for stdin EOF."""

from __future__ import annotations

import sys

if __name__ == "__main__":
    remaining = int(sys.argv[1])
    chunk = b"x" * 65536
    while remaining > 0:
        sys.stdout.buffer.write(chunk[:remaining])
        remaining -= len(chunk)
    sys.stdout.buffer.write(b'\n{"jsonrpc": "2.0", "method": "test/after"}\n')
    sys.stdout.buffer.flush()
    while sys.stdin.buffer.read(65536):
        pass
