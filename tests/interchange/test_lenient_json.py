"""Lenient JSON: what hand-edited client files contain is read; anything else fails with a position (R-1.8)."""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_center.errors import ImportDuplicateKey, ImportJsonInvalid, ImportTooLarge
from mcp_center.interchange import MAX_IMPORT_BYTES, decode_text, lenient_json, loads_lenient
from mcp_center.interchange.lenient_json import MAX_SHOWN_KEY_CHARS
from tests.support.hang import assert_returns


def test_line_and_block_comments_are_ignored_but_not_inside_strings() -> None:
    text = """{
      // a line comment with "quotes" and a trailing comma,
      "url": "https://example.com/mcp", /* inline */ "note": "a // b /* c */ d"
      /* a block
         over lines */
    }"""
    assert loads_lenient(text) == {"url": "https://example.com/mcp", "note": "a // b /* c */ d"}


def test_trailing_commas_in_objects_and_arrays_are_ignored_even_before_a_comment() -> None:
    text = '{"args": ["-y", "pkg",], "env": {"A": "1", // last\n}, }'
    assert loads_lenient(text) == {"args": ["-y", "pkg"], "env": {"A": "1"}}


def test_a_comma_inside_a_string_before_a_bracket_is_kept() -> None:
    assert loads_lenient('{"a": ",]", "b": [",}"]}') == {"a": ",]", "b": [",}"]}


def test_escaped_quotes_do_not_end_a_string_early() -> None:
    assert loads_lenient(r'{"a": "say \"//not a comment\"", "b": 1}') == {"a": 'say "//not a comment"', "b": 1}


def test_a_utf8_byte_order_mark_is_dropped_from_bytes_and_text() -> None:
    assert loads_lenient(decode_text(codecs.BOM_UTF8 + b'{"a": 1}')) == {"a": 1}
    assert loads_lenient("\ufeff" + '{"a": 1}') == {"a": 1}


def test_a_utf16_file_with_a_byte_order_mark_is_read() -> None:
    data = '{"mcpServers": {"time": {"command": "uvx"}}}'.encode("utf-16")
    assert data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE))
    assert loads_lenient(decode_text(data)) == {"mcpServers": {"time": {"command": "uvx"}}}


def test_invalid_json_reports_the_line_and_column_the_editor_shows() -> None:
    text = '{\n  "a": 1\n  "b": 2\n}'
    with pytest.raises(ImportJsonInvalid) as caught:
        loads_lenient(text)
    assert caught.value.code == "IMPORT_JSON_INVALID"
    assert (caught.value.details["line"], caught.value.details["column"]) == (3, 3)


def test_positions_after_a_blanked_comment_and_a_bom_are_unchanged() -> None:
    text = '\ufeff{ /* c */ "a": 1, // x\n  "b": tru }'
    with pytest.raises(ImportJsonInvalid) as caught:
        loads_lenient(text)
    assert (caught.value.details["line"], caught.value.details["column"]) == (2, 8)


def test_an_unterminated_block_comment_is_reported_where_it_starts() -> None:
    with pytest.raises(ImportJsonInvalid) as caught:
        loads_lenient('{\n  "a": 1 /* oops\n}')
    assert (caught.value.details["line"], caught.value.details["column"]) == (2, 10)


def test_the_shortest_unterminated_comment_is_reported() -> None:
    with pytest.raises(ImportJsonInvalid) as caught:
        loads_lenient("{} /*/")
    assert caught.value.details["reason"] == "unterminated comment"


def test_invalid_utf8_reports_the_position_of_the_first_bad_byte() -> None:
    with pytest.raises(ImportJsonInvalid) as caught:
        decode_text(b'{\n  "a": "\xff"\n}')
    assert caught.value.code == "IMPORT_JSON_INVALID"
    assert (caught.value.details["line"], caught.value.details["column"]) == (2, 9)


@pytest.mark.parametrize("codec", ["utf-16-le", "utf-16-be", "utf-32-le"])
def test_utf16_or_utf32_without_a_byte_order_mark_is_named_as_such(codec: str) -> None:
    """break38: UTF-16LE without a BOM was 'not valid UTF-8 (line 1, column 175)', far from the cause."""
    data = '{\n  "mcpServers": {"a": {"command": "x"}}\n}'.encode(codec)
    for sent in (data, data.decode("utf-8")):  # the bytes, and the page's text of them (NULs are UTF-8)
        with pytest.raises(ImportJsonInvalid) as caught:
            decode_text(sent)
        assert "looks like UTF-16 without a byte-order mark" in caught.value.message
        assert caught.value.details["reason"] == "encoding"
        assert caught.value.details["line"] == 1


def test_utf32_with_its_byte_order_mark_is_named_as_such() -> None:
    """It was 'not valid JSON: Expecting value' (the BOM's FF FE read as UTF-16's)."""
    with pytest.raises(ImportJsonInvalid) as caught:
        decode_text('{"mcpServers": {}}'.encode("utf-32"))
    assert caught.value.message.startswith("the file is UTF-32 text")


def test_nesting_too_deep_for_the_parser_is_an_error_not_a_crash() -> None:
    with pytest.raises(ImportJsonInvalid) as caught:
        loads_lenient("[" * 100_000 + "]" * 100_000)
    assert caught.value.code == "IMPORT_JSON_INVALID"


def test_an_integer_too_long_to_convert_is_an_error_not_a_crash() -> None:
    with pytest.raises(ImportJsonInvalid) as caught:
        loads_lenient('{"a": ' + "9" * 5000 + "}")
    assert caught.value.code == "IMPORT_JSON_INVALID"


def test_input_at_the_limit_is_read_and_one_byte_more_is_refused_before_decoding() -> None:
    at_limit = b'{"a": "' + b"x" * (MAX_IMPORT_BYTES - 10) + b'"}'
    assert len(at_limit) == MAX_IMPORT_BYTES - 1
    assert len(decode_text(at_limit)) == MAX_IMPORT_BYTES - 1
    with pytest.raises(ImportTooLarge) as caught:
        decode_text(b"\xff" * (MAX_IMPORT_BYTES + 1))  # not even valid UTF-8: the size is checked first
    assert caught.value.code == "IMPORT_TOO_LARGE"
    assert caught.value.http_status == 413
    assert caught.value.details == {"limit_bytes": 1024 * 1024, "size_bytes": MAX_IMPORT_BYTES + 1}


def test_text_is_measured_in_utf8_bytes() -> None:
    text = "é" * (MAX_IMPORT_BYTES // 2 + 1)  # fewer characters than the limit, more bytes
    with pytest.raises(ImportTooLarge) as caught:
        decode_text(text)
    assert caught.value.details["size_bytes"] == len(text.encode("utf-8"))


def test_an_unpaired_surrogate_escape_is_invalid_json_not_a_later_crash() -> None:
    """JSON escapes may spell a lone surrogate; it could never be stored or answered as UTF-8."""
    with pytest.raises(ImportJsonInvalid) as caught:
        loads_lenient('{"mcpServers": {"a": {"command": "x", "args": ["\\udcff"]}}}')
    assert caught.value.details == {"reason": "unpaired surrogate"}
    assert loads_lenient('{"a": "\\ud83d\\ude00"}') == {"a": "\U0001f600"}  # a valid pair is fine


def test_text_with_an_unpaired_surrogate_is_refused_with_its_position() -> None:
    with pytest.raises(ImportJsonInvalid) as caught:
        decode_text('{\n  "a": "\udcff"\n}')
    assert (caught.value.details["line"], caught.value.details["column"]) == (2, 9)


def _escaped_quotes_after_a_quote_48_kb_are_invalid() -> None:
    with pytest.raises(ImportJsonInvalid):
        loads_lenient('"' + '\\"' * 24_000)


def _escaped_quotes_up_to_the_size_limit_are_invalid() -> None:
    text = decode_text(('"' + '\\"' * (MAX_IMPORT_BYTES // 2 - 1)).encode())
    with pytest.raises(ImportJsonInvalid):
        loads_lenient(text)


def _lines_of_escaped_quotes_up_to_the_size_limit_are_invalid() -> None:
    line = '"' + '\\"' * 1_000 + "\n"
    with pytest.raises(ImportJsonInvalid):
        loads_lenient(decode_text((line * (MAX_IMPORT_BYTES // len(line))).encode()))


def _a_valid_file_with_an_escaped_quote_string_of_a_mib_is_read() -> None:
    value = '\\"' * (MAX_IMPORT_BYTES // 2 - 40)
    assert loads_lenient('{"a": "' + value + '", // c\n}') == {"a": '"' * (MAX_IMPORT_BYTES // 2 - 40)}


@pytest.mark.parametrize(
    "check",
    [
        _escaped_quotes_after_a_quote_48_kb_are_invalid,
        _escaped_quotes_up_to_the_size_limit_are_invalid,
        _lines_of_escaped_quotes_up_to_the_size_limit_are_invalid,
        _a_valid_file_with_an_escaped_quote_string_of_a_mib_is_read,
    ],
)
def test_unterminated_strings_of_escaped_quotes_are_rejected_without_hanging(check: Callable[[], None]) -> None:
    """Hang check, not a speed goal (R-7.3): a quote followed by `\\"` repeated made the comment and
    comma passes retry every escaped quote to the end of the text (48 KB: 9 s; 1 MiB: about an hour,
    on the event loop). Fails only if the parse has not returned after `HANG_BOUND_S` seconds."""
    assert_returns(check)


@pytest.mark.parametrize(
    ("text", "cleaned"),
    [
        ('"a // b\n', '"a     \n'),
        ('"a \\" /* b */\n', '"a \\"        \n'),
        ('"a \\"\\\n// b\n"c"', '"a \\"\\\n    \n"c"'),
        ('["a\\",]\n', '["a\\" ]\n'),
    ],
)
def test_comments_and_commas_after_an_unclosed_quote_are_still_blanked(text: str, cleaned: str) -> None:
    """Unchanged behaviour on broken input: an unclosed quote does not open a string, so comments and
    trailing commas after it are blanked as before (the error position stays where it was)."""
    with pytest.raises(ImportJsonInvalid) as caught:
        loads_lenient(text)
    with pytest.raises(json.JSONDecodeError) as expected:
        json.loads(cleaned)
    assert (caught.value.details["line"], caught.value.details["column"]) == (
        expected.value.lineno,
        expected.value.colno,
    )


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ('{"mcpServers": {"a": {"command": "x"}, "a": {"command": "y"}}}', "mcpServers.a"),
        ('{"mcpServers": {"a": {"command": "x", "command": "y"}}}', "mcpServers.a.command"),
        ('{"servers": {}, "inputs": [{"id": "k"}, {"id": "k", "id": "j"}]}', "inputs.1.id"),
        # the first in document order, though the inner object is parsed first
        ('{"mcpServers": {"b": {}, "b": {"args": [], "args": []}}, "mcpServers": {}}', "mcpServers"),
        ('{"a": {"x": {"y": 1, "y": 2}}, "b": {"z": 1, "z": 2}}', "a.x.y"),
    ],
)
def test_a_key_named_twice_in_one_object_is_refused_with_its_path(text: str, path: str) -> None:
    """JSON readers keep the last of two equal keys, so a server or a field vanished (issue 16)."""
    with pytest.raises(ImportDuplicateKey) as caught:
        loads_lenient(text)
    assert caught.value.code == "IMPORT_DUPLICATE_KEY"
    assert caught.value.details == {"path": path, "key": path.rsplit(".", 1)[-1]}
    assert path in caught.value.message


@pytest.mark.parametrize(
    ("text", "path", "position"),
    [
        ('{"mcpServers": {"a": {"env": {"K": "1", /* again */ "K": "2",},},}}', "mcpServers.a.env[key #2]", 2),
        (
            '{"mcpServers": {"a": {"env": {"ghp_abc123SECRET": "1", "X": "", "ghp_abc123SECRET": "2"}}}}',
            "mcpServers.a.env[key #3]",
            3,
        ),
        (
            '{"servers": {"r": {"headers": {"Bearer sk-SECRETxyz": "1", "Bearer sk-SECRETxyz": "2"}}}}',
            "servers.r.headers[key #2]",
            2,
        ),
    ],
)
def test_a_key_named_twice_beside_secrets_is_reported_by_position_not_text(text: str, path: str, position: int) -> None:
    """A secret pasted as an env or header key was echoed in the message and `details` (issue 16)."""
    with pytest.raises(ImportDuplicateKey) as caught:
        loads_lenient(text)
    assert caught.value.details == {"path": path, "position": position}
    assert path in caught.value.message
    for secret in ("SECRET", '"K"'):
        assert secret not in caught.value.message
        assert secret not in str(caught.value.details)


_GHP = "ghp_SUPERSECRET1234567890abcdef"


@pytest.mark.parametrize(
    ("text", "path", "position"),
    [
        # one level below env: the key above the repeat was echoed
        (
            f'{{"mcpServers": {{"a": {{"env": {{"{_GHP}": {{"k": 1, "k": 2}}}}}}}}}}',
            "mcpServers.a.env[key #1][key #2]",
            2,
        ),
        (f'{{"mcpServers": {{"a": {{"env": [{{"{_GHP}": 1, "{_GHP}": 2}}]}}}}}}', "mcpServers.a.env.0[key #2]", 2),
        (
            f'{{"mcpServers": {{"a": {{"headers": {{"Authorization": '
            f'{{"Bearer {_GHP}": 1, "Bearer {_GHP}": 2}}}}}}}}}}',
            "mcpServers.a.headers[key #1][key #2]",
            2,
        ),
        # an object inside args (arguments are plain text, but an object there is no argument)
        (
            f'{{"mcpServers": {{"a": {{"args": ["--token", {{"{_GHP}": 1, "{_GHP}": 2}}]}}}}}}',
            "mcpServers.a.args.1[key #2]",
            2,
        ),
        # a key that is a credential by its look, outside env/headers/args (and hides the keys below it)
        (f'{{"other": {{"Bearer {_GHP}": {{"x": 1, "x": 2}}}}}}', "other[key #1][key #2]", 2),
        (f'{{"other": {{"https://u:{_GHP}@h/": 1, "https://u:{_GHP}@h/": 2}}}}', "other[key #2]", 2),
    ],
)
def test_no_key_text_below_env_headers_or_args_is_echoed(text: str, path: str, position: int | None) -> None:
    """A duplicate one level below `env`/`headers`, or inside `args`, echoed the secret key above it (issue 16, F3)."""
    with pytest.raises(ImportDuplicateKey) as caught:
        loads_lenient(text)
    expected = {"path": path, "position": position} if position is not None else {"path": path, "key": "x"}
    assert caught.value.details == expected
    assert path in caught.value.message
    assert "SUPERSECRET" not in caught.value.message
    assert "SUPERSECRET" not in str(caught.value.details)


@pytest.mark.parametrize(
    ("text", "path", "key"),
    [
        ('{"mcpServers": {"a.b": {"command": "x", "command": "y"}}}', 'mcpServers["a.b"].command', "command"),
        ('{"mcpServers": {"a": {"b.c": 1, "b.c": 2}}}', 'mcpServers.a["b.c"]', "b.c"),
        ('{"mcpServers": {"": {}, "": {}}}', 'mcpServers[""]', ""),
        ('{"mcpServers": {"0": {"args": [], "args": []}}}', 'mcpServers["0"].args', "args"),
        ('{"mcpServers": {"q\\"]": {}, "q\\"]": {}}}', 'mcpServers["q\\"]"]', 'q"]'),
    ],
)
def test_a_repeated_key_path_quotes_keys_a_dotted_path_would_misread(text: str, path: str, key: str) -> None:
    """`a.b` under `mcpServers` read as the key `b` of a server `a`; an empty key vanished (issue 16)."""
    with pytest.raises(ImportDuplicateKey) as caught:
        loads_lenient(text)
    assert caught.value.details == {"path": path, "key": key}


def test_equal_keys_in_different_objects_are_not_repeats() -> None:
    text = '{"mcpServers": {"a": {"command": "x"}, "b": {"command": "x", "args": ["a", "a"]}}}'
    assert loads_lenient(text)["mcpServers"]["b"] == {"command": "x", "args": ["a", "a"]}


_BREAKER_FILES = [
    # a token pasted as keys below a credential-named key (apiKey, password)
    (
        '{"mcpServers":{"a":{"command":"x","apiKey":{"ghp_SECRETAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA":1,'
        '"ghp_SECRETAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA":2}}}}',
        "mcpServers.a.apiKey[key #2]",
    ),
    (
        '{"mcpServers":{"a":{"command":"x","password":{"hunter2SECRETFFFF":1,"hunter2SECRETFFFF":2}}}}',
        "mcpServers.a.password[key #2]",
    ),
    # a bare token as a key, and as a server name
    (
        '{"mcpServers":{"a":{"command":"x","ghp_SECRETBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB":1,'
        '"ghp_SECRETBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB":2}}}',
        "mcpServers.a[key #3]",
    ),
    (
        '{"mcpServers":{"sk-SECRETDDDDDDDDDDDDDDDDDDDDDDDD":{"command":"x"},'
        '"sk-SECRETDDDDDDDDDDDDDDDDDDDDDDDD":{"command":"y"}}}',
        "mcpServers[key #2]",
    ),
    # a tab after the auth scheme, below Authorization outside headers
    (
        '{"mcpServers":{"a":{"url":"https://x","requestInit":{"Authorization":'
        '{"Bearer\\tSECRETCCCCCCCCCCCCCCCC":1,"Bearer\\tSECRETCCCCCCCCCCCCCCCC":2}}}}}',
        "mcpServers.a.requestInit.Authorization[key #2]",
    ),
    ('{"other":{"Token\\tSECRET":1,"Token\\tSECRET":2}}', "other[key #2]"),
]


@pytest.mark.parametrize(("text", "path"), _BREAKER_FILES)
def test_a_secret_pasted_as_a_repeated_key_is_never_echoed(text: str, path: str) -> None:
    """Keys below a credential-named key, keys longer than a config name and `Bearer<TAB>x` were
    echoed in IMPORT_DUPLICATE_KEY (issue 16, R-1.5)."""
    with pytest.raises(ImportDuplicateKey) as caught:
        loads_lenient(text)
    assert caught.value.details == {"path": path, "position": int(path[-2])}
    assert path in caught.value.message
    assert "SECRET" not in caught.value.message
    assert "SECRET" not in str(caught.value.details)


def test_a_key_up_to_the_shown_length_is_still_named() -> None:
    name = "s" * MAX_SHOWN_KEY_CHARS
    with pytest.raises(ImportDuplicateKey) as caught:
        loads_lenient(f'{{"mcpServers": {{"{name}": {{}}, "{name}": {{}}}}}}')
    assert caught.value.details == {"path": f"mcpServers.{name}", "key": name}


_PIECES = ['"', '\\"', "\\", "//", "/*", "*/", ",", "}", "]", " ", "\n", "a"]


@given(st.lists(st.sampled_from(_PIECES), max_size=40))
@settings(max_examples=400, deadline=None)
def test_the_token_scan_equals_the_one_pattern_substitution_it_replaced(pieces: list[str]) -> None:
    """`_sub_outside_strings` (linear, skipping a run of escaped quotes at once) replaces exactly what
    the single pattern `"<string>"|<token>` substituted before (R-1.8), for both passes, on any mix of
    quotes, escapes, comments, commas and line breaks."""
    text = "".join(pieces)

    def mark(match: re.Match[str]) -> str:
        return f"<{match.start()}:{len(match.group())}>"

    def reference(pattern: str, flags: int) -> str:
        string = r'"(?:[^"\\\n]|\\.)*"'
        return re.sub(
            f"{string}|{pattern}", lambda m: m.group() if m.group().startswith('"') else mark(m), text, flags=flags
        )

    lj = lenient_json  # the scan and its patterns are the unit here (private to the module)
    comment = reference(r"//[^\n]*|/\*(?:.*?\*/|.*)", re.DOTALL)
    scanned = lj._sub_outside_strings(text, lj._QUOTE_OR_COMMENT, lj._ONLY_COMMENT, lj._STRING_BODY_DOTALL, mark)  # pyright: ignore[reportPrivateUsage]
    assert scanned == comment
    comma = reference(r",(?=\s*[}\]])", 0)
    scanned = lj._sub_outside_strings(text, lj._QUOTE_OR_TRAILING_COMMA, lj._ONLY_TRAILING_COMMA, lj._STRING_BODY, mark)  # pyright: ignore[reportPrivateUsage]
    assert scanned == comma
