"""Gateway token names (R-8): an empty name and a too-long one are refused with the field's own code."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_center.errors import RequestInvalid
from mcp_center.service.gateway_tokens import MAX_NAME_CHARS, GatewayTokens


@pytest.mark.parametrize(
    ("name", "code", "says"),
    [
        ("", "FIELD_REQUIRED", "is required"),
        ("   ", "FIELD_REQUIRED", "is required"),
        (None, "FIELD_REQUIRED", "is required"),
        ("x" * (MAX_NAME_CHARS + 1), "FIELD_INVALID", f"at most {MAX_NAME_CHARS}"),
        ("tab\there", "FIELD_INVALID", "printable"),
    ],
)
def test_a_bad_token_name_names_what_is_wrong(tmp_path: Path, name: object, code: str, says: str) -> None:
    tokens = GatewayTokens(tmp_path)
    with pytest.raises(RequestInvalid) as raised:
        tokens.create(name)
    (error,) = raised.value.details["errors"]
    assert (error["field"], error["code"]) == ("name", code)
    assert says in error["message"]
    assert tokens.list() == []


def test_a_good_name_is_kept_trimmed(tmp_path: Path) -> None:
    record, token = GatewayTokens(tmp_path).create("  laptop  ")
    assert record.name == "laptop"
    assert token not in record.view().values()
    assert "sha256" not in record.view()
