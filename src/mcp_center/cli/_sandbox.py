"""What the CLI says about sandboxes (R-11.1): the policy in one line, `add`'s sandbox options, the
warm-up's outcome, and a server's logs with what the sandbox refused marked.

Pure formatting and parsing; the commands that use it are in `cli/__init__.py`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcp_center.cli._suggest import program

if TYPE_CHECKING:  # the transports package loads the SDK: only its types are used here
    from mcp_center.transports import SandboxSupport, WarmUpResult

__all__ = ["WRITABLE_PREFIX", "log_lines", "policy_line", "sandbox_body", "support_lines", "warm_up_lines"]

WRITABLE_PREFIX = "rw:"
"""`--sandbox-path rw:/srv/out` binds /srv/out writable; without the prefix a path is read-only."""


def sandbox_body(
    *, sandbox: bool, network: str | None, paths: list[str] | None, memory_mb: int | None
) -> dict[str, Any] | None:
    """The `sandbox` field of a create body from `add`'s options, or None for an unconfined server.

    Any of `--network`, `--sandbox-path`, `--memory-mb` implies `--sandbox`; unset fields take the
    host's defaults (the API validates every value).
    """
    if not (sandbox or network or paths or memory_mb is not None):
        return None
    policy: dict[str, Any] = {}
    if network:
        policy["network"] = network
    if memory_mb is not None:
        policy["memory_mb"] = None if memory_mb == 0 else memory_mb  # only 0 means none: -5 is refused
    if paths:
        policy["paths"] = [
            {"path": p.removeprefix(WRITABLE_PREFIX), "writable": p.startswith(WRITABLE_PREFIX)} for p in paths
        ]
    return policy


def policy_line(view: dict[str, Any]) -> str:
    """One line for `list`: `sandboxed (network none)` / `unconfined` for stdio, `-` for remote."""
    if view.get("transport") != "stdio":
        return "-"
    policy = view.get("sandbox")
    if not policy:
        return "unconfined"
    host: dict[str, Any] = view.get("sandbox_host") or {}
    suffix = "" if host.get("available", True) else ", cannot run here"
    return f"sandboxed (network {policy['network']}{suffix})"


def unconfined_means() -> str:
    """Said under `list` when a server shown is `unconfined` (the word alone did not say what it means);
    the command as it runs from here (`_suggest.program`)."""
    return (
        "unconfined: no sandbox; the server runs with your user's rights (its files, network and processes); "
        f"'{program()} add --sandbox' confines one (see docs/sandbox.md)"
    )


def legend_lines(servers: list[dict[str, Any]]) -> list[str]:
    """Under `list`: what `unconfined` means, once, when a server shown is (R-11.1); else nothing."""
    return [unconfined_means()] if any(policy_line(view) == "unconfined" for view in servers) else []


def support_lines(support: SandboxSupport) -> list[str]:
    """`mcp-center sandbox check`: whether sandboxes run on this host, and how."""
    if not support.available:
        return [f"sandboxes cannot run on this host ({support.missing}): {support.message}"]
    how = (
        "mcp-center runs as root: each sandboxed server runs as an unprivileged uid of its own, without capabilities"
        if support.mode == "setuid"
        else "each sandboxed server runs in an unprivileged user namespace as this user"
    )
    return [f"sandboxes work here (bubblewrap {support.bwrap})", how]


def warm_up_lines(server_id: str, result: WarmUpResult) -> list[str]:
    """`mcp-center sandbox warm-up`: what ran, how it ended, and its last output lines."""
    head = (
        f"warmed up {server_id} in {result.elapsed_ms} ms: the package is in the sandbox's caches"
        if result.ok
        else f"warm-up of {server_id} failed "
        f"({'timed out' if result.exit_code is None else f'exit code {result.exit_code}'})"
    )
    lines = [head, f"  ran: {' '.join(result.argv)}", *(f"    {line}" for line in result.output_tail)]
    if result.others:  # several instances: each warms its own home of the server
        lines.append(f"  the other instances warm their own copies in the background: {', '.join(result.others)}")
    return lines


def log_lines(logs: dict[str, Any]) -> list[str]:
    """`mcp-center logs`: requests (oldest first) and stderr, each refusal marked `[sandbox: kind ERRNO]`."""

    def mark(item: dict[str, Any]) -> str:
        violation = item.get("violation")
        return f" [sandbox: {violation['kind']} {violation['errno']}]" if violation else ""

    lines = ["requests:"] if logs.get("requests") else ["requests: none yet"]
    for entry in logs.get("requests", []):
        took = f" {entry['duration_ms']} ms" if entry.get("duration_ms") is not None else ""
        error: dict[str, Any] = entry.get("error") or {}
        said = f" {error.get('message')}" if error else ""
        lines.append(
            f"  {entry['at']} {entry.get('method') or entry['kind']} {entry['status']}{took}{said}{mark(entry)}"
        )
    stderr = logs.get("stderr", [])
    if stderr:
        lines.append("stderr:")
        lines += [f"  {item['at']}{mark(item)} {item['line']}" for item in stderr]
    return lines
