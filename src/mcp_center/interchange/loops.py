"""An imported entry that is mcp-center's own gateway: a loop (issue 16, R-1.8).

A client file exported for Claude Code (or a Claude Desktop file) holds an entry for this host's
gateway: `http://127.0.0.1:8765/mcp` with a gateway token, or the stdio bridge `mcp-center gateway
--stdio`. Imported, that entry would be a server whose tools are the gateway's own, each call
calling itself again. Such an entry is rejected (GATEWAY_LOOP) when it surely names this host, and
warned about (GATEWAY_OF_MCP_CENTER) when it looks like an mcp-center gateway elsewhere. Pure.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Collection, Mapping, Sequence
from urllib.parse import urlsplit, urlunsplit

from mcp_center.config import is_loopback_host
from mcp_center.config.origins import normalize_origin
from mcp_center.errors import FieldError
from mcp_center.interchange.dialects import ClientEntry

__all__ = ["gateway_problem", "origin_of"]

_GATEWAY_PATH = re.compile(r"^/mcp(/[^/]+)?/?$")
_GATEWAY_TOKEN = re.compile(r"mcpg_|MCP_CENTER_GATEWAY_TOKEN")
"""A gateway token (`mcpg_...`) or the variable the README's snippets read it from."""
_LOOSE_IPV4_PART = re.compile(r"^(0x[0-9a-f]+|[0-9]+)$")


def _loose_ipv4(host: str) -> ipaddress.IPv4Address | None:
    """An IPv4 address in the forms a C resolver also reads: `127.1`, `2130706433`, `0x7f.0.0.1`,
    `0177.0.0.1` (1 to 4 parts, the last filling the remaining bytes); None for anything else."""
    parts = host.split(".")
    if not 1 <= len(parts) <= 4 or not all(_LOOSE_IPV4_PART.match(p) for p in parts):
        return None
    values = [
        int(p, 16) if p.startswith("0x") else int(p, 8) if len(p) > 1 and p.startswith("0") else int(p) for p in parts
    ]
    *leading, last = values
    if any(v > 255 for v in leading) or last >= 256 ** (4 - len(leading)):
        return None
    value = last
    for i, v in enumerate(leading):
        value += v << (8 * (3 - i))
    return ipaddress.IPv4Address(value)


def _is_loopback(host: str) -> bool:
    """Whether `host` (no brackets) reaches this machine: `config.is_loopback_host` (`localhost`,
    127.0.0.0/8, `::1`), `*.localhost` (RFC 6761), a loopback address however written (`127.1`,
    `2130706433`, `::ffff:127.0.0.1`), and the unspecified `0.0.0.0`/`::` (a connection to it
    reaches this host)."""
    name = host.rstrip(".")
    if is_loopback_host(name) or name.endswith(".localhost"):
        return True
    address: ipaddress.IPv4Address | ipaddress.IPv6Address | None
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        address = _loose_ipv4(name)
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address is not None and (address.is_loopback or address.is_unspecified)


def origin_of(url: str) -> str | None:
    """The origin of `url` (`config.origins.normalize_origin`: lowercased, default port dropped,
    any `user:password@` left out), a host that reaches this machine written `127.0.0.1` (the same
    host either way: `_is_loopback`); None for no http(s) URL."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return None
    if "@" in parts.netloc:
        parts = parts._replace(netloc=parts.netloc.rpartition("@")[2])
    origin = normalize_origin(urlunsplit(parts))
    if origin is None:
        return None
    scheme, _, authority = origin.partition("://")
    if authority.startswith("["):
        host, _, rest = authority[1:].partition("]")
    else:
        host, colon, port = authority.partition(":")
        rest = colon + port
    return f"{scheme}://127.0.0.1{rest}" if _is_loopback(host) else origin


def _option(args: Sequence[str], name: str) -> str | None:
    for i, arg in enumerate(args):
        if arg == name and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None


def _loop(field: str, what: str) -> FieldError:
    why = "imported, its tools would call themselves; leave it out (it is how a client reaches mcp-center)"
    return FieldError(field, "GATEWAY_LOOP", f"is this host's own gateway ({what}): {why}")


def _elsewhere(field: str, what: str) -> FieldError:
    why = "if it is this host's, its tools would call themselves: leave it out"
    return FieldError(field, "GATEWAY_OF_MCP_CENTER", f"looks like an mcp-center gateway ({what}); {why}")


def _bridge(entry: ClientEntry, own: Collection[str]) -> FieldError | None:
    command = (entry.command or "").replace("\\", "/").rsplit("/", 1)[-1].lower().removesuffix(".exe")
    if command != "mcp-center" or "gateway" not in entry.args or "--stdio" not in entry.args:
        return None
    url = _option(entry.args, "--url") or entry.env.get("MCP_CENTER_URL")
    elsewhere = _option(entry.args, "--data-dir") or entry.env.get("MCP_CENTER_DATA_DIR")
    if (url is None and elsewhere is None) or (url is not None and origin_of(url) in own):
        return _loop("command", "the stdio bridge `mcp-center gateway --stdio`")
    return _elsewhere("command", "the stdio bridge `mcp-center gateway --stdio` of another host or data directory")


def _remote(url: str, headers: Mapping[str, str], own: Collection[str]) -> FieldError | None:
    try:
        path = urlsplit(url.strip()).path
    except ValueError:
        return None
    if not _GATEWAY_PATH.match(path):
        return None
    origin = origin_of(url)
    if origin is not None and origin in own:
        return _loop("url", f"{origin}/mcp")
    if any(_GATEWAY_TOKEN.search(value) for value in headers.values()):
        return _elsewhere("url", "a /mcp URL with a gateway token")
    return None


def gateway_problem(entry: ClientEntry, own: Collection[str]) -> FieldError | None:
    """Whether `entry` is mcp-center's gateway: GATEWAY_LOOP (reject it) or GATEWAY_OF_MCP_CENTER (warn).

    Args:
        entry: A normalized import entry.
        own: This host's origins (`origin_of`): where its `/mcp` is reached.
    Returns:
        GATEWAY_LOOP for `/mcp` or `/mcp/<id>` at one of `own`, or the stdio bridge with no `--url`
        (nor another data directory) or with one of `own`; GATEWAY_OF_MCP_CENTER for the bridge to
        another host or directory, or a `/mcp` URL elsewhere with a gateway token
        (`mcpg_...`, `${MCP_CENTER_GATEWAY_TOKEN}`) in a header; None otherwise.
    """
    if entry.transport == "stdio":
        return _bridge(entry, own)
    return _remote(entry.url, entry.headers, own) if entry.url is not None else None
