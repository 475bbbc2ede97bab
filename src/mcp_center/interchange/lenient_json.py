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
from typing import Any

from mcp_center.errors import ImportJsonInvalid, ImportTooLarge

__all__ = ["MAX_IMPORT_BYTES", "decode_text", "loads_lenient"]

MAX_IMPORT_BYTES = 1024 * 1024
"""Largest import input in bytes (1 MiB, measured as UTF-8 for text). Larger input is refused
before parsing with IMPORT_TOO_LARGE: real client files are a few KiB; for a big
`~/.claude.json`, import only its `mcpServers` and `projects` (see the README)."""

# A JSON string (unrolled loop: fast on long strings), a line comment, or a block comment that may
# run to the end of the text (reported as unterminated).
_STRING = r'"[^"\\\n]*(?:\\.[^"\\\n]*)*"'
_STRING_OR_COMMENT = re.compile(_STRING + r"|//[^\n]*|/\*(?:.*?\*/|.*)", re.DOTALL)
_STRING_OR_TRAILING_COMMA = re.compile(_STRING + r"|,(?=\s*[}\]])")
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
        return data.removeprefix("\ufeff")
    _check_size(len(data))
    encoding = "utf-16" if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) else "utf-8-sig"
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


def loads_lenient(text: str) -> Any:
    """Parse JSON with comments, trailing commas and a leading BOM.

    Args:
        text: The decoded input (see `decode_text`).
    Returns:
        The parsed value (objects as dicts; a repeated key keeps its last value, like JSON.parse).
    Raises:
        ImportJsonInvalid: not JSON even so, or a string holds an unpaired surrogate escape (it could
            not be stored or answered as UTF-8); `details.line`/`details.column` are 1-based and count
            characters, `details.reason` is the parser's reason (never a value from the input).
    """
    text = text.removeprefix("\ufeff")
    cleaned = _STRING_OR_COMMENT.sub(_blank_comment, text)
    cleaned = _STRING_OR_TRAILING_COMMA.sub(_blank_comma, cleaned)
    try:
        value = json.loads(cleaned)
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


def _blank_comment(match: re.Match[str]) -> str:
    token = match.group()
    if token.startswith('"'):
        return token
    if token.startswith("/*") and (len(token) < 4 or not token.endswith("*/")):
        line, column = _position(match.string, match.start())
        raise ImportJsonInvalid(
            f"the file is not valid JSON: unterminated /* comment (line {line}, column {column})",
            details={"line": line, "column": column, "reason": "unterminated comment"},
        )
    return _NOT_NEWLINE.sub(" ", token)


def _blank_comma(match: re.Match[str]) -> str:
    token = match.group()
    return token if token.startswith('"') else " "


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
