"""Routing a URI to the resource template it was expanded from (RFC 6570 levels 1-4, R-5.5)."""

from __future__ import annotations

import pytest

from mcp_center.registry import template_matches


@pytest.mark.parametrize(
    ("template", "uri"),
    [
        ("events://list{?topic,limit}", "events://list"),
        ("events://list{?topic,limit}", "events://list?topic=a&limit=2"),
        ("users://{id}/profile{#section}", "users://42/profile"),
        ("users://{id}/profile{#section}", "users://42/profile#bio"),
        ("files://{+path}", "files://a/b/c.txt"),
        ("tree://root{/segments*}", "tree://root"),
        ("tree://root{/segments*}", "tree://root/a/b"),
        ("map://{x}{.ext}", "map://tile.png"),
        ("m://x{;a,b}", "m://x;a=1;b=2"),
        ("q://x{?a}{&b}", "q://x?a=1&b=2"),
        ("test://template/{id}/data", "test://template/123/data"),
        ("plain://fixed", "plain://fixed"),
    ],
)
def test_a_uri_expanded_from_a_template_matches_it(template: str, uri: str) -> None:
    assert template_matches(template, uri)


@pytest.mark.parametrize(
    ("template", "uri"),
    [
        ("events://list{?topic,limit}", "events://listing"),  # an optional part starts with its operator
        ("users://{id}/profile{#section}", "users:///profile"),  # a simple variable is filled in
        ("users://{id}/profile{#section}", "users://42/profiles"),
        ("test://template/{id}/data", "test://template/123/other"),
        ("tree://root{/segments*}", "tree://rootx"),
        ("plain://fixed", "plain://fixed/"),
    ],
)
def test_a_uri_not_expanded_from_a_template_does_not_match_it(template: str, uri: str) -> None:
    assert not template_matches(template, uri)
