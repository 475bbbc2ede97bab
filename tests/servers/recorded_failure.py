"""A stdio server that fails to start the way a real one did: it prints the stderr and stdout a real
run printed (recorded on 2026-12-05, trial35 MED 4), then exits 1. argv[1] picks the recording:

- `npm-404`: `npx -y @modelcontextprotocol/server-everythin` (a typo'd package, npm 11): the decisive
  `E404 Not Found` first, then npm's closing notes and update notice.
- `unknown-transport`: `npx -y @modelcontextprotocol/server-everything stdoi`: a banner and
  `Unknown transport: stdoi` on stderr, then the list of transports on stdout.
"""

from __future__ import annotations

import sys

RECORDED: dict[str, tuple[str, str]] = {
    "npm-404": (
        "npm error code E404\n"
        "npm error 404 Not Found - GET https://registry.npmjs.org/@modelcontextprotocol%2fserver-everythin\n"
        "npm error 404\n"
        "npm error 404  The requested resource '@modelcontextprotocol/server-everythin@*' could not be found or "
        "you do not have permission to access it.\n"
        "npm error 404\n"
        "npm error 404 Note that you can also install from a\n"
        "npm error 404 tarball, folder, http url, or git url.\n"
        "npm notice\n"
        "npm notice New minor version of npm available! 11.19.1 -> 11.21.3\n"
        "npm notice Changelog: https://github.com/npm/cli/releases/tag/v11.21.3\n"
        "npm notice To update run: npm install -g npm@11.21.3\n"
        "npm notice\n"
        "npm error A complete log of this run can be found in: /root/.npm/_logs/2026-12-05T01_36_17_289Z-debug-0.log\n",
        "",
    ),
    "unknown-transport": (
        "-----------------------------------------------------\n"
        "  Everything Server Launcher\n"
        "  Usage: node ./index.js [stdio|sse|streamableHttp]\n"
        "  Default transport: stdio\n"
        "-----------------------------------------------------\n"
        "Unknown transport: stdoi\n",
        "Available transports:\n- stdio\n- sse\n- streamableHttp\n",
    ),
}

if __name__ == "__main__":
    stderr, stdout = RECORDED[sys.argv[1]]
    sys.stderr.write(stderr)
    sys.stderr.flush()
    sys.stdout.write(stdout)
    sys.stdout.flush()
    sys.exit(1)
