"""The client configuration dialects we import, detected from the file's shape (R-1.8).

- `claude-code`: `mcpServers` of `.mcp.json`; in `~/.claude.json` also
  `projects[<path>].mcpServers`. `type` stdio/http/sse, `${VAR}`, `${VAR:-default}`.
- `claude-desktop`: `mcpServers` of `claude_desktop_config.json`; stdio only, no `type`.
- `cursor`: `mcpServers` of `.cursor/mcp.json`; no `type` (`command` ⇒ stdio, `url` ⇒
  Streamable HTTP), `${env:VAR}`.
- `vscode`: `servers` and `inputs` of `.vscode/mcp.json`, or `mcp.servers` of a settings.json;
  `type`, `${input:id}`.
- `windsurf`: `mcpServers` of `mcp_config.json`; `serverUrl` for remote servers.
- `bare`: the top-level object is the map of servers.

Every entry is read by the same lenient rules, whatever the dialect: `type` may be spelled
`stdio`, `http`, `streamable-http`, `streamableHttp`, `streamable_http` or `sse` (any case); no
`type` means stdio for `command` and Streamable HTTP for `url`/`serverUrl`. Threats: a remote
entry being run as a local command, and a guessed transport. So an entry with both `command` and
`url` is rejected (COMMAND_AND_URL), a remote `type` with a `command` is rejected
(TRANSPORT_MISMATCH), `ws` is rejected as unsupported and any other `type` as unknown — each
with a reason, never guessed. Keys we do not use are reported as warnings (FIELD_IGNORED).

Only the shape is in a pasted text; a file also has a name. `format_named` reads a client's own
file name (`.mcp.json`, `claude_desktop_config.json`, `.cursor/mcp.json`, ...) and keeps it when
the content has that client's shape: a `.mcp.json` of stdio servers without `type` is Claude
Code's, although its shape alone is Claude Desktop's. A name that says nothing changes nothing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from mcp_center.errors import CenterError, FieldError, ImportFormatMismatch, ImportFormatUnknown, did_you_mean
from mcp_center.models import is_array, is_object

__all__ = [
    "EXPORT_FORMATS",
    "IMPORT_FORMATS",
    "ClientDocument",
    "ClientEntry",
    "InputDeclaration",
    "Misspelling",
    "RawEntry",
    "format_named",
    "normalize_entry",
    "read_document",
]

IMPORT_FORMATS: tuple[str, ...] = ("auto", "claude-code", "claude-desktop", "cursor", "vscode", "windsurf", "bare")
"""Accepted values of the `format` argument; `auto` detects the dialect from the file's shape."""

EXPORT_FORMATS: tuple[str, ...] = ("claude-code", "cursor", "vscode", "claude-desktop")
"""The dialects `export` writes (R-1.10). Here, beside the ones read, rather than in `export`: the
CLI names both in its `--help`, which then loads neither the export's configuration models nor
pydantic (issue 16)."""

_TRANSPORTS = {
    "stdio": "stdio",
    "http": "streamable_http",
    "streamable-http": "streamable_http",
    "streamablehttp": "streamable_http",
    "streamable_http": "streamable_http",
    "sse": "sse",
}
_UNSUPPORTED_TRANSPORTS = frozenset({"ws", "wss", "websocket"})
_STDIO_KEYS = frozenset({"type", "transport", "command", "args", "env", "cwd"})
_REMOTE_KEYS = frozenset({"type", "transport", "url", "serverUrl", "headers"})
_ENTRY_HINTS = frozenset({"command", "url", "serverUrl", "type"})
_TARGET_KEYS = frozenset({"command", "url", "serverUrl"})
"""The keys that say what an entry runs or reaches: one of them is offered first for a typo'd key."""
_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


@dataclass(frozen=True)
class RawEntry:
    """One server entry as found: its key (the client's server name), where, and the raw JSON value."""

    name: str
    source: str
    """Path of the entry in the file, e.g. `mcpServers.github` or `projects["/home/a/app"].mcpServers.db`."""
    value: Any


@dataclass(frozen=True)
class InputDeclaration:
    """A VS Code `inputs` item: a value VS Code would prompt for (`${input:<id>}`)."""

    description: str | None
    password: bool
    default: str | None


@dataclass(frozen=True)
class Misspelling:
    """A key above the entries that is a typo of a container key its object lacks (R-1.8, R-7.3).

    Attributes:
        key: The key as written (`mcpServer`), at `path` (`mcpServer`, `projects["/a"].mcpserver`).
        meant: The container key it is close to (`mcpServers`).
    """

    key: str
    path: str
    meant: str

    def hint(self) -> str:
        """`it has 'mcpServer': did you mean 'mcpServers'?` (the path when the key is nested)."""
        return f"it has {_quoted(self.path)}: did you mean {_quoted(self.meant)}?"

    def error(self) -> FieldError:
        """The rejection of what is under the key: KEY_MISSPELLED, entry-relative field ``."""
        return FieldError(
            "",
            "KEY_MISSPELLED",
            f"is not a key mcp-center reads: did you mean {_quoted(self.meant)}? Nothing under it is imported",
        )


@dataclass(frozen=True)
class ClientDocument:
    """A parsed client file: its (detected) format, its entries in file order, VS Code inputs by variable name."""

    format: str
    entries: tuple[RawEntry, ...]
    inputs: Mapping[str, InputDeclaration] = field(default_factory=dict[str, InputDeclaration])
    misspelled: tuple[Misspelling, ...] = ()
    """Keys above the entries that look like a misspelled container key (`project` for `projects`):
    nothing under them is read, and the plan lists each as rejected (KEY_MISSPELLED)."""


@dataclass(frozen=True)
class ClientEntry:
    """An entry in our terms, before secrets and variables are decided.

    String values may still hold `${...}` references. `transport` is `stdio`, `streamable_http` or `sse`.
    """

    name: str
    source: str
    transport: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict[str, str])
    cwd: str | None = None
    url: str | None = None
    url_field: str = "url"
    headers: Mapping[str, str] = field(default_factory=dict[str, str])
    warnings: tuple[FieldError, ...] = ()


def read_document(data: Any, format: str = "auto") -> ClientDocument:
    """Find the server entries in a parsed client file.

    Args:
        data: The parsed JSON.
        format: One of `IMPORT_FORMATS`; `auto` detects it.
    Returns:
        The document with its format (the detected one for `auto`).
    Raises:
        ImportFormatUnknown: `auto` and no known shape (or the top level is not an object).
        ImportFormatMismatch: an explicit format whose servers key is missing or not an object.
    """
    if not is_object(data):
        raise ImportFormatUnknown(
            "the file is not a client configuration: its top level is not a JSON object",
            details={"expected": ["mcpServers", "servers", "a map of servers"]},
        )
    doc: dict[str, Any] = data
    try:
        detected = _detect(doc) if format == "auto" else format
        if detected in {"claude-code", "claude-desktop", "cursor", "windsurf"}:
            entries = tuple(_mcp_servers_entries(doc, detected, explicit=format != "auto"))
            return ClientDocument(detected, entries, misspelled=_misspellings(doc, _MCP_SERVERS_KEYS))
        if detected == "vscode":
            document = _vscode(doc)
            top: tuple[str, ...] = ("servers", "inputs") if _vscode_section(doc) is doc else ()
            return replace(document, misspelled=_misspellings(doc, top))
    except (ImportFormatUnknown, ImportFormatMismatch) as exc:
        raise _with_hints(exc, _misspellings(doc, _CONTAINER_KEYS)) from None
    if detected == "bare":
        return ClientDocument("bare", tuple(RawEntry(k, _path(k), v) for k, v in doc.items()))
    raise ImportFormatMismatch(  # unreachable for validated formats; kept for direct callers
        f"unknown format '{format}'", details={"format": format, "expected": list(IMPORT_FORMATS)}
    )


def _detect(doc: dict[str, Any]) -> str:
    servers = doc.get("mcpServers")
    if _has_project_servers(doc):
        return "claude-code"
    if is_object(servers):
        entries = [v for v in servers.values() if is_object(v)]
        if any("serverUrl" in e for e in entries):
            return "windsurf"
        if any("type" in e for e in entries):
            return "claude-code"
        if any("url" in e for e in entries):
            return "cursor"
        return "claude-desktop"
    if servers is not None:
        raise ImportFormatUnknown("mcpServers is not an object of servers", details={"field": "mcpServers"})
    if is_object(doc.get("servers")) or is_object(_vscode_section(doc).get("servers")):
        return "vscode"
    if doc and all(is_object(v) and not _ENTRY_HINTS.isdisjoint(v) for v in doc.values()):
        return "bare"
    raise ImportFormatUnknown(
        "no MCP servers found: expected 'mcpServers' (Claude Code, Claude Desktop, Cursor, Windsurf), "
        "'servers' (VS Code) or a map of server entries",
        details={"expected": ["mcpServers", "servers", "a map of servers"]},
    )


_NAMED_FORMATS: Mapping[str, str] = {
    ".mcp.json": "claude-code",
    ".claude.json": "claude-code",
    "claude_desktop_config.json": "claude-desktop",
    "mcp_config.json": "windsurf",
}
"""A client's own file name (compared without case) -> its dialect; `mcp.json` goes by its folder."""
_NAMED_FOLDERS: Mapping[str, str] = {".cursor": "cursor", ".vscode": "vscode"}
"""The folder of a plain `mcp.json` (or a VS Code `settings.json`) -> its dialect."""


def format_named(filename: str, data: Any) -> str:
    """The dialect a client file's name says, when its parsed content has that dialect's shape (R-1.8).

    Args:
        filename: The file's path as given (`.mcp.json`, `~/.cursor/mcp.json`, `backup/x.mcp.json`);
            its last part and that part's folder are read, case-insensitively.
        data: The parsed JSON of the file.
    Returns:
        `claude-code` for `.mcp.json` (or a name ending in it) and `.claude.json`, `claude-desktop`
        for `claude_desktop_config.json`, `windsurf` for `mcp_config.json`, `cursor` / `vscode` for
        `mcp.json` in `.cursor` / `.vscode` (and `settings.json` in `.vscode`) — each only when
        `data` holds that dialect's servers key (`mcpServers`, Claude Code's `projects`, VS Code's
        `servers` or `mcp.servers`). Otherwise `auto`: the name says nothing, or the content is
        another client's, and the shape decides as before. Never raises.
    """
    parts = filename.replace("\\", "/").rstrip("/").split("/")
    name = parts[-1].lower()
    folder = parts[-2].lower() if len(parts) > 1 else ""
    named = _NAMED_FORMATS.get(name)
    if named is None and name.endswith(".mcp.json"):
        named = "claude-code"
    if named is None and name in {"mcp.json", "settings.json"}:
        named = _NAMED_FOLDERS.get(folder)
        if name == "settings.json" and named != "vscode":
            named = None
    if named is None or not is_object(data):
        return "auto"
    doc: dict[str, Any] = data
    if named == "vscode":
        fits = is_object(_vscode_section(doc).get("servers"))
    else:
        fits = is_object(doc.get("mcpServers")) or (named == "claude-code" and _has_project_servers(doc))
    return named if fits else "auto"


_CONTAINER_KEYS = ("mcpServers", "projects", "servers", "inputs", "mcp")
"""The keys above the entries that any dialect reads (top level, or `mcp` of a settings.json)."""
_MCP_SERVERS_KEYS = ("mcpServers", "projects")
"""The top-level keys of a file whose servers are under `mcpServers` (Claude Code's `projects` too)."""


def _typo_of(key: str, wanted: str) -> bool:
    """Whether `key` is a typo of `wanted`: equal ignoring case, `_` and `-`, or at most
    len(wanted) // 3 (at most 2) single-character edits away (`project`, `mcp_servers`, `Servers`)."""
    a = key.lower().replace("_", "").replace("-", "")
    b = wanted.lower()
    limit = min(2, len(b) // 3)
    if abs(len(a) - len(b)) > limit or len(a) > 4 * len(b):
        return False
    previous = list(range(len(b) + 1))
    for i, char in enumerate(a, 1):
        current = [i]
        for j, other in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (char != other)))
        previous = current
    return previous[-1] <= limit


def _misspelled_in(obj: dict[str, Any], wanted: tuple[str, ...], prefix: tuple[str, ...]) -> list[Misspelling]:
    absent = [w for w in wanted if w not in obj]
    found: list[Misspelling] = []
    for key in list(obj)[:200]:
        if key in wanted:
            continue
        meant = next((w for w in absent if _typo_of(key, w)), None)
        if meant is not None:
            found.append(Misspelling(key, _path(*prefix, key), meant))
    return found


def _misspellings(doc: dict[str, Any], top: tuple[str, ...]) -> tuple[Misspelling, ...]:
    """The keys above the entries that look like typos of a container key their object lacks (R-7.3):
    at the top level (of `top`), in a settings.json's `mcp` (`servers`, `inputs`) and in each of
    `~/.claude.json`'s `projects` (`mcpServers`). A key is flagged only when the key it is close to
    is missing, so a file's other settings (`enabledMcpjsonServers`) are not."""
    found = _misspelled_in(doc, top, ())
    mcp = doc.get("mcp")
    if is_object(mcp) and mcp is not doc:
        found += _misspelled_in(mcp, ("servers", "inputs"), ("mcp",))
    projects = doc.get("projects")
    if is_object(projects):
        for project, settings in list(projects.items())[:200]:
            if is_object(settings):
                found += _misspelled_in(settings, ("mcpServers",), ("projects", project))
    return tuple(found[:20])


def _with_hints(error: ImportFormatUnknown | ImportFormatMismatch, found: tuple[Misspelling, ...]) -> CenterError:
    """`error` with "; it has 'mcpServer': did you mean 'mcpServers'?" added, `details.did_you_mean`
    (the keys meant) and `details.misspelled` (the paths of the keys found), when the file has keys
    like the ones looked for."""
    if not found:
        return error
    message = str(error) + "; " + "; ".join(m.hint() for m in found[:3])
    meant = list(dict.fromkeys(m.meant for m in found))
    details = {**error.details, "did_you_mean": meant, "misspelled": [m.path for m in found]}
    return type(error)(message, details=details)


def _has_project_servers(doc: dict[str, Any]) -> bool:
    projects = doc.get("projects")
    return is_object(projects) and any(is_object(p) and is_object(p.get("mcpServers")) for p in projects.values())


def _mcp_servers_entries(doc: dict[str, Any], format: str, *, explicit: bool) -> list[RawEntry]:
    entries: list[RawEntry] = []
    servers: object = doc.get("mcpServers")
    has_projects = format == "claude-code" and _has_project_servers(doc)
    if not is_object(servers) and not has_projects:
        if explicit:
            raise ImportFormatMismatch(
                f"this is not a {format} file: it has no 'mcpServers' object",
                details={"format": format, "expected": ["mcpServers"]},
            )
        raise ImportFormatUnknown("mcpServers is not an object of servers", details={"field": "mcpServers"})
    if is_object(servers):
        entries += [RawEntry(k, _path("mcpServers", k), v) for k, v in servers.items()]
    if has_projects:
        for project, settings in doc["projects"].items():
            if is_object(settings) and is_object(settings.get("mcpServers")):
                entries += [
                    RawEntry(k, _path("projects", project, "mcpServers", k), v)
                    for k, v in settings["mcpServers"].items()
                ]
    return entries


def _vscode_section(doc: dict[str, Any]) -> dict[str, Any]:
    """`doc` itself for `.vscode/mcp.json`, or its `mcp` object for a settings.json."""
    if is_object(doc.get("servers")):
        return doc
    mcp = doc.get("mcp")
    return mcp if is_object(mcp) else {}


def _vscode(doc: dict[str, Any]) -> ClientDocument:
    section = _vscode_section(doc)
    servers = section.get("servers")
    if not is_object(servers):
        raise ImportFormatMismatch(
            "this is not a vscode file: it has no 'servers' object",
            details={"format": "vscode", "expected": ["servers", "mcp.servers"]},
        )
    prefix = () if section is doc else ("mcp",)
    entries = tuple(RawEntry(k, _path(*prefix, "servers", k), v) for k, v in servers.items())
    inputs: dict[str, InputDeclaration] = {}
    raw_inputs = section.get("inputs")
    for item in raw_inputs if is_array(raw_inputs) else []:
        if not is_object(item) or not isinstance(item.get("id"), str):
            continue
        description = item.get("description")
        default = item.get("default")
        name = f"input:{item['id']}"
        earlier = inputs.get(name)
        # We err towards secret: a `password` that is not plainly false ("yes", 1), or an id
        # declared twice with a password either time, is a password; the first declaration's text wins.
        password = item.get("password", False) is not False or (earlier is not None and earlier.password)
        if earlier is not None:
            inputs[name] = InputDeclaration(earlier.description, password, earlier.default)
            continue
        inputs[name] = InputDeclaration(
            description=description if isinstance(description, str) else None,
            password=password,
            default=default if isinstance(default, str) else None,
        )
    return ClientDocument("vscode", entries, inputs)


def _path(*parts: str) -> str:
    """A readable path: plain keys joined by dots, other keys as JSON strings in brackets."""
    out = ""
    for part in parts:
        if _PLAIN_KEY.fullmatch(part):
            out += ("." if out else "") + part
        else:
            out += f"[{json.dumps(part, ensure_ascii=False)}]"
    return out


def normalize_entry(raw: RawEntry) -> ClientEntry | list[FieldError]:
    """Decide an entry's transport and read its fields, or say why it cannot be imported.

    Returns:
        The `ClientEntry`, or the list of `FieldError`s (entry-relative fields) that reject it:
        ENTRY_INVALID, ENTRY_EMPTY, COMMAND_AND_URL, URL_AMBIGUOUS, TRANSPORT_UNSUPPORTED,
        TRANSPORT_UNKNOWN, TRANSPORT_MISMATCH, FIELD_INVALID.
    """
    value = raw.value
    if not is_object(value):
        return [FieldError("", "ENTRY_INVALID", "is not an object")]
    entry: dict[str, Any] = value
    transport, type_error = _transport(entry)
    if type_error is not None:
        return [type_error]
    has_command = "command" in entry
    url_keys = [k for k in ("url", "serverUrl") if k in entry]
    if has_command and url_keys:
        return [
            FieldError(
                "command",
                "COMMAND_AND_URL",
                f"is set together with '{url_keys[0]}': an entry is either local (command) or remote (url), never both",
            )
        ]
    if len(url_keys) == 2 and entry["url"] != entry["serverUrl"]:
        return [FieldError("serverUrl", "URL_AMBIGUOUS", "differs from 'url'; keep one of them")]
    if transport is None:
        if has_command:
            transport = "stdio"
        elif url_keys:
            transport = "streamable_http"
        else:
            return [FieldError("", "ENTRY_EMPTY", f"has neither 'command' nor 'url'{_keys_instead(entry)}")]
    elif transport == "stdio" and not has_command:
        if url_keys:
            return [FieldError("type", "TRANSPORT_MISMATCH", "is stdio but the entry has a URL and no command")]
        return [FieldError("command", "FIELD_REQUIRED", "is required for a stdio server")]
    elif transport != "stdio" and not url_keys:
        if has_command:
            return [
                FieldError(
                    "type", "TRANSPORT_MISMATCH", "is a remote transport: a remote entry is never run as a command"
                )
            ]
        return [FieldError("url", "FIELD_REQUIRED", "is required for a remote server")]
    errors: list[FieldError] = []
    warnings: list[FieldError] = []
    if transport == "stdio":
        known = _STDIO_KEYS
        command = _string(entry, "command", errors)
        args = _string_list(entry, "args", errors)
        env = _string_map(entry, "env", errors, warnings)
        cwd = _string(entry, "cwd", errors, optional=True)
        result = ClientEntry(raw.name, raw.source, transport, command=command, args=args, env=env, cwd=cwd)
    else:
        known = _REMOTE_KEYS
        url_field = url_keys[0]
        url = _string(entry, url_field, errors)
        headers = _string_map(entry, "headers", errors, warnings)
        result = ClientEntry(raw.name, raw.source, transport, url=url, url_field=url_field, headers=headers)
    if errors:
        return errors
    warnings += [FieldError(k, "FIELD_IGNORED", _ignored_reason(k, transport)) for k in entry if k not in known]
    return replace(result, warnings=tuple(warnings))


def _transport(entry: dict[str, Any]) -> tuple[str | None, FieldError | None]:
    raw_types = [(k, entry[k]) for k in ("type", "transport") if entry.get(k) is not None]
    found: set[str] = set()
    for key, raw in raw_types:
        if not isinstance(raw, str):
            return None, FieldError(key, "TRANSPORT_UNKNOWN", "must be a string such as stdio, http or sse")
        spelled = raw.strip().lower()
        if spelled in _UNSUPPORTED_TRANSPORTS:
            return None, FieldError(
                key, "TRANSPORT_UNSUPPORTED", "WebSocket is not an MCP transport mcp-center supports"
            )
        if spelled not in _TRANSPORTS:
            return None, FieldError(
                key, "TRANSPORT_UNKNOWN", "is not a known transport (stdio, http, streamable-http, sse)"
            )
        found.add(_TRANSPORTS[spelled])
    if len(found) > 1:
        return None, FieldError("transport", "TRANSPORT_MISMATCH", "'type' and 'transport' disagree")
    return (found.pop() if found else None), None


_KEY_CHARS = 60
"""An entry's key is echoed up to this many characters (it is untrusted input)."""


def _quoted(key: str) -> str:
    return repr(key if len(key) <= _KEY_CHARS else f"{key[:_KEY_CHARS]}...")


def _keys_instead(entry: dict[str, Any]) -> str:
    """What an entry without 'command' or 'url' has instead (R-7.3, trial35): each key close to a
    key entries have, with that key ("; it has 'comand': did you mean 'command'?"), else the keys
    it has ("; its keys: 'cmd'"), else "" (an empty entry). A key entries already have ('args',
    'env') is never hinted at itself (break36)."""
    keys = list(entry)
    every = _STDIO_KEYS | _REMOTE_KEYS
    unknown = [key for key in keys if key not in every][:20]
    close = [(key, did_you_mean(key, _TARGET_KEYS) or did_you_mean(key, every)) for key in unknown]
    hinted = [f"it has {_quoted(key)}: did you mean {_quoted(near[0])}?" for key, near in close if near]
    if hinted:
        return "; " + "; ".join(hinted[:3])
    if not keys:
        return ""
    more = f" and {len(keys) - 5} more" if len(keys) > 5 else ""
    return f"; its keys: {', '.join(_quoted(key) for key in keys[:5])}{more}"


def _ignored_reason(key: str, transport: str) -> str:
    if key == "envFile":
        return "env files are not read; put the variables in 'env'"
    if transport != "stdio" and key in _STDIO_KEYS:
        return "is not used by a remote server (remote entries are never run as commands)"
    if transport == "stdio" and key in _REMOTE_KEYS:
        return "is not used by a stdio server"
    near = did_you_mean(key, _STDIO_KEYS if transport == "stdio" else _REMOTE_KEYS)
    hint = f"; did you mean {_quoted(near[0])}?" if near else ""
    return f"is not imported (mcp-center has no such setting){hint}"


def _string(entry: dict[str, Any], key: str, errors: list[FieldError], *, optional: bool = False) -> str | None:
    value = entry.get(key)
    if value is None and optional:
        return None
    if not isinstance(value, str):
        errors.append(FieldError(key, "FIELD_INVALID", "must be a string"))
        return None
    return value


def _string_list(entry: dict[str, Any], key: str, errors: list[FieldError]) -> tuple[str, ...]:
    value = entry.get(key)
    if value is None:
        return ()
    if not is_array(value):
        errors.append(FieldError(key, "FIELD_INVALID", "must be a list of strings"))
        return ()
    items: list[str] = []
    for i, item in enumerate(value):
        if isinstance(item, str):
            items.append(item)
        else:
            errors.append(FieldError(f"{key}.{i}", "FIELD_INVALID", "must be a string"))
    return tuple(items)


def _string_map(
    entry: dict[str, Any], key: str, errors: list[FieldError], warnings: list[FieldError]
) -> dict[str, str]:
    value = entry.get(key)
    if value is None:
        return {}
    if not is_object(value):
        errors.append(FieldError(key, "FIELD_INVALID", "must be an object of strings"))
        return {}
    items: dict[str, str] = {}
    for name, item in value.items():
        text = _scalar_text(item)
        if text is not None:
            items[name] = text
        elif item is None:
            warnings.append(FieldError(f"{key}.{name}", "FIELD_IGNORED", "is null (unset); not imported"))
        else:
            errors.append(FieldError(f"{key}.{name}", "FIELD_INVALID", "must be a string"))
    return items


def _scalar_text(value: object) -> str | None:
    """A string; numbers and booleans as a JavaScript client would pass them (`3000`, `true`)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and value == value and value not in (float("inf"), float("-inf")):
        return str(int(value)) if value.is_integer() else repr(value)
    return None
