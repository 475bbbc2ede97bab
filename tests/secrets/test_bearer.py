"""`presented_bearer`: how the admin API and the gateway read `Authorization: Bearer <credential>` (R-7.1)."""

from __future__ import annotations

import pytest

from mcp_center.secrets import presented_bearer


@pytest.mark.parametrize(
    ("header", "credential"),
    [
        ("Bearer abc", "abc"),
        ("bearer abc", "abc"),
        ("BEARER   abc  ", "abc"),
        ("Bearer a b", "a b"),
        ("Bearer", None),
        ("Bearer    ", None),
        ("Basic abc", None),
        ("abc", None),
        ("", None),
        (None, None),
    ],
)
def test_only_a_bearer_scheme_with_a_credential_presents_one(header: str | None, credential: str | None) -> None:
    assert presented_bearer(header) == credential
