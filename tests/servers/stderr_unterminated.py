"""Write argv[1] bytes of "z" to stderr without any newline, then wait for stdin EOF."""

from __future__ import annotations

import sys

if __name__ == "__main__":
    sys.stderr.buffer.write(b"z" * int(sys.argv[1]))
    sys.stderr.buffer.flush()
    while sys.stdin.buffer.read(65536):
        pass
