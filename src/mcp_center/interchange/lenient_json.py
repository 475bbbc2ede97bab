"""Read JSON the way client configuration files are really written (R-1.8).

Claude Desktop, Cursor, VS Code and Windsurf files are hand-edited: they carry `//` and `/* */`
comments, trailing commas and sometimes a byte-order mark (UTF-8, or UTF-16 from Notepad). This
module accepts exactly those extras and nothing else: no single quotes, no unquoted keys, no
`NaN`-style extensions beyond what Python's `json` already reads.

Threat: a pasted file used to exhaust the host. Input over `MAX_IMPORT_BYTES` (1 MiB) is refused
before it is decoded or parsed; nesting too deep for the parser is refused with an error rather
than a crash. Comments and trailing commas are blanked in place (same length, same line breaks),
so every error carries the line and column the user sees in their editor.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

from mcp_center.errors import ImportDuplicateKey, ImportEmpty, ImportJsonInvalid, ImportTooLarge
from mcp_center.interchange.credentials import is_credential_name, is_credential_value

__all__ = ["MAX_IMPORT_BYTES", "decode_text", "loads_lenient"]

MAX_IMPORT_BYTES = 1024 * 1024
"""Largest import input in bytes (1 MiB, measured as UTF-8 for text). Larger input is refused
before parsing with IMPORT_TOO_LARGE: real client files are a few KiB; for a big
`~/.claude.json`, import only its `mcpServers` and `projects` (docs/import-export.md#what-we-decided)."""

# A JSON string starts at `"`; its body is matched from after the quote by a separate pattern
# (unrolled loop, possessive: one forward pass, no backtracking), so that a string that never closes
# is scanned once rather than once per escaped quote inside it (see `_sub_outside_strings`). The
# other tokens are a line comment, a block comment that may run to the end of the text (reported as
# unterminated), and a trailing comma. `.` after a backslash also takes a line break in the comment
# pass (DOTALL), not in the comma pass, as before.
_STRING_BODY_DOTALL = re.compile(r'[^"\\\n]*+(?:\\.[^"\\\n]*+)*+', re.DOTALL)
_STRING_BODY = re.compile(r'[^"\\\n]*+(?:\\.[^"\\\n]*+)*+')
_COMMENT = r"//[^\n]*|/\*(?:.*?\*/|.*)"
_TRAILING_COMMA = r",(?=\s*[}\]])"
_QUOTE_OR_COMMENT = re.compile(f'"|{_COMMENT}', re.DOTALL)
_ONLY_COMMENT = re.compile(_COMMENT, re.DOTALL)
_QUOTE_OR_TRAILING_COMMA = re.compile(f'"|{_TRAILING_COMMA}')
_ONLY_TRAILING_COMMA = re.compile(_TRAILING_COMMA)
_NOT_NEWLINE = re.compile(r"[^\n]")


def decode_text(data: bytes | str) -> str:
    """Return the text of an import input, size-checked, without its byte-order mark.

    Args:
        data: The file's bytes (UTF-8, or UTF-16 with a BOM) or already decoded text.
    Returns:
        The text, BOM removed (columns in errors then match what an editor shows).
    Raises:
        ImportTooLarge: more than `MAX_IMPORT_BYTES` bytes (text: its UTF-8 length).
        ImportJsonInvalid: the bytes are not valid UTF-8 / UTF-16, or the text holds an unpaired
            surrogate (line and column of the first bad character).
    """
    if isinstance(data, str):
        size = len(data) if len(data) > MAX_IMPORT_BYTES else len(data.encode("utf-8", "surrogatepass"))
        _check_size(size)
        try:
            data.encode("utf-8")
        except UnicodeEncodeError as exc:
            line, column = _position(data, exc.start)
            raise ImportJsonInvalid(
                f"the text has an unpaired surrogate character (line {line}, column {column})",
                details={"line": line, "column": column, "reason": "encoding"},
            ) from None
        _refuse_nul(data)
        return data.removeprefix("\ufeff")
    _check_size(len(data))
    if data.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):  # before UTF-16's: FF FE starts both
        raise ImportJsonInvalid(
            "the file is UTF-32 text (its byte-order mark says so): save it as UTF-8 and import it again",
            details={"line": 1, "column": 1, "reason": "encoding"},
        )
    encoding = "utf-16" if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) else "utf-8-sig"
    if encoding == "utf-8-sig":
        _refuse_nul(data)
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        good = data[: exc.start].decode(encoding, errors="replace")
        line, column = _position(good, len(good))
        raise ImportJsonInvalid(
            f"the file is not valid {'UTF-16' if encoding == 'utf-16' else 'UTF-8'} text "
            f"(line {line}, column {column})",
            details={"line": line, "column": column, "reason": "encoding"},
        ) from None


def _refuse_nul(data: bytes | str) -> None:
    """Refuse a NUL character (never valid in JSON text, raw): one in a file read as UTF-8 means it is
    UTF-16 (or UTF-32) without a byte-order mark, which would otherwise be 'not JSON' at some column.

    Raises:
        ImportJsonInvalid: `reason` `encoding`, the position of the first NUL.
    """
    if isinstance(data, bytes):
        at = data.find(b"\x00")
        before = data[: max(at, 0)].decode("utf-8", errors="replace")
    else:
        at = data.find("\x00")
        before = data[: max(at, 0)]
    if at < 0:
        return
    line, column = _position(before, len(before))
    raise ImportJsonInvalid(
        f"the text holds a NUL character (line {line}, column {column}): it looks like UTF-16 without a "
        "byte-order mark; save it as UTF-8 and import it again",
        details={"line": line, "column": column, "reason": "encoding"},
    )


def loads_lenient(text: str) -> Any:
    """Parse JSON with comments, trailing commas and a leading BOM.

    Args:
        text: The decoded input (see `decode_text`).
    Returns:
        The parsed value (objects as dicts).
    Raises:
        ImportEmpty: the text is only white space (no CLI advice in its message: REST and the page
            show it as it is; the CLI words its own).
        ImportDuplicateKey: an object names a key twice (JSON.parse would keep the last one and a
            server or a field would vanish); `details.path` is its dotted path (`mcpServers.a`; a
            key that is empty, all digits or holds `.`, `[`, `]` or `"` as `["<JSON string>"]`)
            and `details.key` the key. Below `env`, `headers`, `args` or a credential-named key
            (`apiKey`, `password`, `Authorization`; any depth), and for a key that is longer than
            `MAX_SHOWN_KEY_CHARS` or looks like a credential anywhere, no key's text is given (it
            may be a secret pasted as a key, R-1.5): such a key is written `[key #<n>]`, its 1-based
            position in its object, and for the repeat itself `details.position` is n and there is
            no `details.key`.
        ImportJsonInvalid: not JSON even so, or a string holds an unpaired surrogate escape (it could
            not be stored or answered as UTF-8); `details.line`/`details.column` are 1-based and count
            characters, `details.reason` is the parser's reason (never a value from the input).
    """
    text = text.removeprefix("\ufeff")
    if not text.strip():  # an empty file or paste: not a parser's "Expecting value" (the CLI words its own)
        raise ImportEmpty(
            "the configuration is empty: nothing to import; paste or send the text of a client's configuration "
            "file (Claude Code, Claude Desktop, Cursor, VS Code or Windsurf)",
            details={"reason": "empty"},
        )
    cleaned = _sub_outside_strings(text, _QUOTE_OR_COMMENT, _ONLY_COMMENT, _STRING_BODY_DOTALL, _blank_comment)
    cleaned = _sub_outside_strings(cleaned, _QUOTE_OR_TRAILING_COMMA, _ONLY_TRAILING_COMMA, _STRING_BODY, _blank_comma)
    repeated: dict[int, tuple[dict[str, Any], str, int]] = {}
    try:
        value = json.loads(cleaned, object_pairs_hook=_noting_repeats(repeated))
        if repeated:
            raise _duplicate(value, repeated)
        # An unpaired \uD800-\uDFFF escape parses, but cannot be stored or answered as UTF-8.
        json.dumps(value, ensure_ascii=False).encode("utf-8")
        return value
    except UnicodeEncodeError:
        raise ImportJsonInvalid(
            "the file is not valid JSON: it has an unpaired surrogate escape (\\uD800-\\uDFFF)",
            details={"reason": "unpaired surrogate"},
        ) from None
    except json.JSONDecodeError as exc:
        raise ImportJsonInvalid(
            f"the file is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})",
            details={"line": exc.lineno, "column": exc.colno, "reason": exc.msg},
        ) from None
    except RecursionError:
        raise ImportJsonInvalid(
            "the file is not valid JSON: nested too deeply", details={"reason": "nested too deeply"}
        ) from None
    except ValueError:  # e.g. an integer literal longer than Python's 4300-digit limit
        raise ImportJsonInvalid(
            "the file is not valid JSON: a number is out of range", details={"reason": "number out of range"}
        ) from None


def _noting_repeats(
    repeated: dict[int, tuple[dict[str, Any], str, int]],
) -> Callable[[list[tuple[str, Any]]], dict[str, Any]]:
    """An `object_pairs_hook` that builds each object as `json` does and notes, by the object's
    `id`, the object, the first key it names twice and that key's 1-based position among the
    object's keys (the parse goes on: the path is found afterwards). The noted object is kept, so
    its `id` is not reused by a later one when a repeated key drops it from the value."""

    def build(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        built = dict(pairs)
        if len(built) != len(pairs):
            seen: set[str] = set()
            for position, (key, _) in enumerate(pairs, 1):
                if key in seen:
                    repeated[id(built)] = (built, key, position)
                    break
                seen.add(key)
        return built

    return build


_SECRET_BEARING = frozenset({"env", "headers", "args"})
"""Keys (any case) whose contents may hold secrets: below one of them, at any depth, no key's text is
given in a path (a secret pasted by mistake as a key, `{"env": {"ghp_...": "1", "ghp_...": "2"}}`,
or one level deeper, `{"headers": {"Authorization": {"Bearer ...": 1, ...}}}`, must not be echoed);
each key is written by its 1-based position in its object, `[key #<n>]`. `args` is among them: its
items are stored in plain text, yet an object there is not an argument, and its keys may be one.
A key named like a credential (`apiKey`, `password`, `Authorization`: `is_credential_name`) hides
the keys below it the same way."""
MAX_SHOWN_KEY_CHARS = 24
"""Longest key whose text a path gives (characters). Tokens are longer (`ghp_` + 36, `sk-` + 48,
`xoxb-...`, a JWT); config field names, variable names and the server names people type are not,
so a longer key, which may be a token pasted as a key or as a server name, is written by position."""
_PLAIN_SEGMENT = re.compile(r'(?![0-9]+$)[^.\[\]"]+')
"""A key written as it is in a path; others (empty, all digits, with `.`, `[`, `]` or `"`) are
written `["<JSON string>"]`, so a path names one place only."""


def _hides_below(key: str) -> bool:
    """True when no key below `key` (any depth) is given by its text (see `_SECRET_BEARING`)."""
    return key.lower() in _SECRET_BEARING or is_credential_name(key)


def _segment(key: str, position: int, hidden: bool) -> str:
    """How a key is written in a path: by position when `hidden`, when the key is longer than
    `MAX_SHOWN_KEY_CHARS` or when it looks like a credential (`is_credential_value`: `Bearer ...`,
    a URL with a password), else by its text."""
    if hidden or len(key) > MAX_SHOWN_KEY_CHARS or is_credential_value(key):
        return f"[key #{position}]"
    return key if _PLAIN_SEGMENT.fullmatch(key) else f"[{json.dumps(key)}]"


def _path(parts: Sequence[str]) -> str:
    return "".join(p if p.startswith("[") or i == 0 else "." + p for i, p in enumerate(parts))


def _duplicate(value: Any, repeated: Mapping[int, tuple[dict[str, Any], str, int]]) -> ImportDuplicateKey:
    """The refusal of the first repeated key in document order, with its path (see `loads_lenient`)."""
    stack: list[tuple[Any, tuple[str, ...], bool]] = [(value, (), False)]
    while stack:
        node, path, hidden = stack.pop()
        if isinstance(node, dict):
            obj = cast(dict[str, Any], node)
            if id(obj) in repeated:
                _, key, position = repeated[id(obj)]
                segment = _segment(key, position, hidden)
                where = _path((*path, segment))
                if segment.startswith("[key #"):
                    return ImportDuplicateKey(
                        f"the file names the key at '{where}' twice (its text is not shown: it may be a "
                        "secret); a JSON reader would keep only the last one. Remove or rename one of them",
                        details={"path": where, "position": position},
                    )
                return ImportDuplicateKey(
                    f"the file names '{where}' twice; a JSON reader would keep only the last one. "
                    "Remove or rename one of them",
                    details={"path": where, "key": key},
                )
            stack += reversed(
                [
                    (v, (*path, _segment(k, i, hidden)), hidden or _hides_below(k))
                    for i, (k, v) in enumerate(obj.items(), 1)
                ]
            )
        elif isinstance(node, list):
            stack += reversed([(v, (*path, str(i)), hidden) for i, v in enumerate(cast(list[Any], node))])
    raise AssertionError("a repeated key was noted in an object that is not in the value")


def _sub_outside_strings(
    text: str,
    tokens: re.Pattern[str],
    others: re.Pattern[str],
    string_body: re.Pattern[str],
    replace: Callable[[re.Match[str]], str],
) -> str:
    """`tokens.sub(replace, text)` for the tokens that are not inside a JSON string, in linear time.

    Same result as substituting with the single pattern `"<string body>"|<tokens>`, which is what
    this module used to do: a string that never closes (no closing quote before a raw line break
    or the end) is not a string, and scanning resumes just after its opening quote, so comments and
    commas in it are still found. That pattern retried every quote inside such a run, each time to
    the end of the run (`"\\"\\"\\"...`: quadratic, about an hour for 1 MiB). Here the run is
    scanned once: every quote inside it is escaped in it, so a string opened there would fail at
    the same place; quotes before that place are skipped without scanning, and without a step of
    this loop each: the next token other than a quote (`others`, searched once and kept until
    passed) says where scanning resumes, else the run's end (a MiB of `\\"` lines took 1 s, 20 s
    on a loaded machine, a step per quote).

    Args:
        text: The text to clean.
        tokens: `"` or one of the tokens to replace (never an empty match).
        others: The tokens to replace alone (`tokens` without its `"`).
        string_body: The body of a JSON string, matched from just after its opening quote.
        replace: Returns the replacement of a token's match.
    Returns:
        The text with every token outside strings replaced.
    """
    parts: list[str] = []
    copied = searched = 0
    strings_from = 0  # a quote before this offset cannot open a string (see above)
    other_at = -1  # where the next token that is not a quote starts (len(text): none), once searched
    while (match := tokens.search(text, searched)) is not None:
        start = match.start()
        if match.group() != '"':
            parts += (text[copied:start], replace(match))
            copied = searched = match.end()
            continue
        if start >= strings_from:
            body_end = cast("re.Match[str]", string_body.match(text, start + 1)).end()
            if text.startswith('"', body_end):
                searched = body_end + 1
                continue
            strings_from = body_end
        if other_at <= start:
            found = others.search(text, start + 1)
            other_at = len(text) if found is None else found.start()
        searched = min(other_at, strings_from)  # both after `start`: the run's quotes are skipped at once
    parts.append(text[copied:])
    return "".join(parts)


def _blank_comment(match: re.Match[str]) -> str:
    token = match.group()
    if token.startswith("/*") and (len(token) < 4 or not token.endswith("*/")):
        line, column = _position(match.string, match.start())
        raise ImportJsonInvalid(
            f"the file is not valid JSON: unterminated /* comment (line {line}, column {column})",
            details={"line": line, "column": column, "reason": "unterminated comment"},
        )
    return _NOT_NEWLINE.sub(" ", token)


def _blank_comma(match: re.Match[str]) -> str:
    del match
    return " "


def _position(text: str, offset: int) -> tuple[int, int]:
    """1-based (line, column) of character `offset` in `text`."""
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return line, column


def _check_size(size: int) -> None:
    if size > MAX_IMPORT_BYTES:
        raise ImportTooLarge(
            f"the import is {size} bytes; the limit is {MAX_IMPORT_BYTES} bytes (1 MiB)",
            details={"limit_bytes": MAX_IMPORT_BYTES, "size_bytes": size},
        )
