"""A stdio MCP server that tries to break out of its sandbox (raw JSON-RPC, standard library only).

Standard library only, so it runs with the system's `python3` inside a sandbox that shows nothing
but system directories and this file. Every tool tries one thing and reports what the kernel said:
a success as text, a failure as an `isError` result whose text starts with the errno name
(`EACCES: Permission denied: /path`), which is what a sandboxed server's request log classifies.

Tools (arguments in parentheses):
- `read_file(path)`, `write_file(path, text)`, `list_dir(path)`: file system access.
- `connect(host, port)`: a TCP connection (closed at once).
- `fork_bomb(count)`: fork up to `count` children (each waits on a pipe), report how many it got
  and the error that stopped it, then end them all.
- `allocate(mb)`: allocate and touch `mb` MiB.
- `open_files(count)`: open /dev/null `count` times.
- `whoami()`: uid, gid, pid, capabilities, no_new_privs, hostname, home, cwd, env names (JSON).
- `escape_group(marker)`: start a sleeping Python in a new session (leaving our process group)
  with `marker` as an argument, and return its pid inside the sandbox.
- `say(text)`: write `text` as one line to stderr.
- `echo(text)`: return `text` (the server still serves).
"""

from __future__ import annotations

import errno
import json
import os
import socket
import subprocess
import sys
from typing import Any


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def failure(exc: BaseException) -> dict[str, Any]:
    if isinstance(exc, OSError) and exc.errno is not None:
        name = errno.errorcode.get(exc.errno, str(exc.errno))
        text = f"{name}: {exc.strerror}" + (f": {exc.filename}" if exc.filename else "")
    else:
        text = f"{type(exc).__name__}: {exc}"
    return {"content": [{"type": "text", "text": text}], "isError": True}


def ok(value: Any) -> dict[str, Any]:
    text = value if isinstance(value, str) else json.dumps(value)
    return {"content": [{"type": "text", "text": text}]}


def fork_bomb(count: int) -> dict[str, Any]:
    read_end, write_end = os.pipe()
    children: list[int] = []
    stopped: BaseException | None = None
    for _ in range(count):
        try:
            pid = os.fork()
        except OSError as exc:
            stopped = exc
            break
        if pid == 0:  # child: wait until the parent closes the pipe, then leave
            os.close(write_end)
            os.read(read_end, 1)
            os._exit(0)
        children.append(pid)
    os.close(write_end)
    os.close(read_end)
    for pid in children:
        os.waitpid(pid, 0)
    if stopped is None:
        return ok({"forked": len(children)})
    result = failure(stopped)
    result["content"][0]["text"] += f" (after {len(children)} forks)"
    return result


def whoami() -> dict[str, Any]:
    status: dict[str, str] = {}
    with open("/proc/self/status", encoding="ascii") as file:
        for line in file:
            key, _, value = line.partition(":")
            status[key] = value.strip()
    return ok(
        {
            "uid": os.getuid(),
            "gid": os.getgid(),
            "pid": os.getpid(),
            "cap_eff": status.get("CapEff"),
            "cap_bnd": status.get("CapBnd"),
            "no_new_privs": status.get("NoNewPrivs"),
            "hostname": socket.gethostname(),
            "home": os.environ.get("HOME"),
            "cwd": os.getcwd(),
            "env": sorted(os.environ),
        }
    )


def call(name: str, args: dict[str, Any]) -> dict[str, Any]:
    try:
        if name == "read_file":
            with open(args["path"], encoding="utf-8", errors="replace") as file:
                return ok(file.read())
        if name == "write_file":
            with open(args["path"], "w", encoding="utf-8") as file:
                file.write(args.get("text", "x"))
            return ok("written")
        if name == "list_dir":
            return ok(sorted(os.listdir(str(args["path"]))))
        if name == "connect":
            with socket.create_connection((args["host"], int(args["port"])), timeout=5):
                return ok("connected")
        if name == "fork_bomb":
            return fork_bomb(int(args.get("count", 10_000)))
        if name == "allocate":
            block = bytearray(int(args["mb"]) * 1024 * 1024)
            for i in range(0, len(block), 4096):
                block[i] = 1
            return ok(f"allocated {len(block)} bytes")
        if name == "open_files":
            files = [open(os.devnull, "rb") for _ in range(int(args["count"]))]  # noqa: SIM115
            for file in files:
                file.close()
            return ok(f"opened {len(files)}")
        if name == "whoami":
            return whoami()
        if name == "escape_group":
            child = subprocess.Popen(
                [sys.executable, "-c", "import time; time.sleep(300)", args["marker"]],
                start_new_session=True,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            return ok({"pid": child.pid})
        if name == "say":
            sys.stderr.write(args["text"] + "\n")
            sys.stderr.flush()
            return ok("said")
        if name == "echo":
            return ok(args["text"])
    except (OSError, MemoryError, ValueError) as exc:
        return failure(exc)
    return failure(ValueError(f"unknown tool {name}"))


TOOLS = [
    "read_file",
    "write_file",
    "list_dir",
    "connect",
    "fork_bomb",
    "allocate",
    "open_files",
    "whoami",
    "escape_group",
    "say",
    "echo",
]


def answer(request_id: object, method: str, params: dict[str, Any]) -> None:
    if method == "initialize":
        result: dict[str, Any] = {
            "protocolVersion": params["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "escape", "version": "1.0"},
        }
    elif method == "tools/list":
        result = {"tools": [{"name": name, "inputSchema": {"type": "object"}} for name in TOOLS]}
    elif method == "tools/call":
        result = call(str(params.get("name")), dict(params.get("arguments") or {}))
    else:
        result = {}
    send({"jsonrpc": "2.0", "id": request_id, "result": result})


def main() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        if "id" in message and "method" in message:
            answer(message["id"], message["method"], message.get("params") or {})


if __name__ == "__main__":
    main()
