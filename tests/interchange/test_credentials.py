"""Which names and values are credentials (R-1.5): we err towards secret."""

from __future__ import annotations

import pytest

from mcp_center.interchange.credentials import (
    bearer_token_of,
    credential_query_params,
    is_credential_name,
    is_credential_value,
)


@pytest.mark.parametrize(
    "name",
    [
        "GITHUB_TOKEN",
        "OPENAI_API_KEY",
        "CLIENT_SECRET",
        "DB_PASSWORD",
        "GITHUB_PERSONAL_ACCESS_TOKEN",
        "GH_PAT",
        "APIKEY",
        "apiKey",
        "githubToken",
        "Authorization",
        "Proxy-Authorization",
        "X-Api-Key",
        "x-api-key",
        "X-Auth-Token",
        "Cookie",
        "Ocp-Apim-Subscription-Key",
        "api_key",
        "MCP_CENTER_SECRET_DOCS_X_TENANT",
    ],
)
def test_credential_looking_names_are_detected(name: str) -> None:
    assert is_credential_name(name)


@pytest.mark.parametrize(
    "name", ["LOG_LEVEL", "PORT", "DATABASE_URL", "X-Workspace", "Accept-Language", "HOME", "PWD", "MONKEY"]
)
def test_ordinary_names_are_not_credentials(name: str) -> None:
    assert not is_credential_name(name)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("Bearer abc123", True),
        ("basic ZGFuYTpwdw==", True),
        ("postgresql://shop:hunter2@localhost:5432/shop", True),
        ("redis://:only-password@cache:6379/0", True),
        ("https://example.com/path", False),
        ("postgresql://localhost/shop", False),
        ("Bearer", False),
        ("info", False),
    ],
)
def test_credential_values_are_recognised_whatever_their_name(value: str, expected: bool) -> None:
    assert is_credential_value(value) is expected


@pytest.mark.parametrize(
    ("value", "token"),
    [
        ("Bearer abc.def-123", "abc.def-123"),
        ("bearer ${API_TOKEN}", "${API_TOKEN}"),
        ("  BEARER   tok  ", "tok"),
        ("Bearer a b", None),
        ("Basic abc", None),
        ("abc", None),
    ],
)
def test_only_exactly_bearer_and_one_token_is_a_bearer_token(value: str, token: str | None) -> None:
    assert bearer_token_of(value) == token


def test_credential_query_parameters_are_listed_by_name() -> None:
    url = "https://mcp.example.com/mcp?api_key=x&team=core&access_token=y"
    assert credential_query_params(url) == ["access_token", "api_key"]
    assert credential_query_params("https://mcp.example.com/mcp") == []
