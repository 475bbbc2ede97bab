"""MCP servers for tests: real SDK servers and scriptable misbehaving ones.

Modules named `*_stdio.py` and the other small scripts of the stdio tests are run as child
processes (`sys.executable path/to/script.py ...`), never imported; the rest are imported.
"""
