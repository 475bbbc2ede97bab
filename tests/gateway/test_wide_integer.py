"""`has_wide_integer` finds what the regex `[0-9]{19}` finds, and nothing else (issue 12, R-8.1).

The gateway leaves a request whose body may hold an integer beyond 64 bits to the SDK's parser
(`orjson` would read it as a float). The search is a translate-and-find instead of a regex; these
checks compare the two on seeded random bodies rich in digit runs, and at the edges. `body_shape`
gives that answer and the body's opening brackets from one translate and one count: the same as
the separate searches and counts it replaces.
"""

from __future__ import annotations

import random
import re

import pytest

from mcp_center.gateway.fastpath import SDK_DEPTH_LIMIT, body_shape, has_wide_integer, parsed_unlike_sdk

REFERENCE = re.compile(rb"[0-9]{19}")


@pytest.mark.parametrize(
    ("body", "wide"),
    [
        (b"", False),
        (b"1" * 18, False),
        (b"1" * 19, True),
        (b'{"id":1180591620717411303424}', True),
        (b'{"id":-1180591620717411303424}', True),
        (b'{"id":9223372036854775807}', False),  # 2**63 - 1: nineteen digits, still flagged below
        (b"123456789.123456789", False),
        (b"\xff\x00" + b"0" * 19 + b"\xfe", True),
        (b"\xd9" * 40, False),  # a byte that ends in 9 is not a digit
    ],
)
def test_edges_match_the_reference(body: bytes, wide: bool) -> None:
    assert has_wide_integer(body) is (REFERENCE.search(body) is not None)
    if b"9223372036854775807" not in body:
        assert has_wide_integer(body) is wide


def test_seeded_random_bodies_match_the_reference() -> None:
    rng = random.Random(1205)  # noqa: S311 - seeded test bodies, not cryptography
    alphabet = b'0123456789999-.:"{}[], ex'
    for _ in range(3000):
        body = bytes(rng.choice(alphabet) for _ in range(rng.randrange(0, 120)))
        assert has_wide_integer(body) is (REFERENCE.search(body) is not None), body
        assert body_shape(body) == (has_wide_integer(body), body.count(b"[") + body.count(b"{")), body


def test_a_wide_integer_sends_the_body_to_the_sdk() -> None:
    assert parsed_unlike_sdk(b'{"id":11805916207174113034240}', {"id": 1.1805916207174113e22})
    assert not parsed_unlike_sdk(b'{"id":1180591620717}', {"id": 1180591620717})


def test_the_shape_counts_both_brackets_and_only_them() -> None:
    body = b'{"a":[{"b":"[{x}]"}],"c":"\xe2\x80\x9b9999999999999999999"}'
    assert body_shape(body) == (True, 5)
    assert body_shape(b"{}[]") == (False, 2)
    deep = b"[" * (SDK_DEPTH_LIMIT + 1) + b"]" * (SDK_DEPTH_LIMIT + 1)
    nested: list[object] = []
    for _ in range(SDK_DEPTH_LIMIT):
        nested = [nested]
    assert parsed_unlike_sdk(deep, nested, body_shape(deep))
    assert parsed_unlike_sdk(deep, nested) is parsed_unlike_sdk(deep, nested, body_shape(deep))
    assert not parsed_unlike_sdk(deep, [], body_shape(deep))  # many brackets, shallow message: orjson's parse stands
