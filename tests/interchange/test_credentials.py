"""Which names and values are credentials (R-1.5): we err towards secret."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from mcp_center.interchange.credentials import (
    bearer_token_of,
    credential_args,
    credential_query_params,
    is_credential_name,
    is_credential_value,
)
from tests.support.hang import assert_returns


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


def _letters_of_900_kb_are_not_a_credential() -> None:
    assert not is_credential_value("a" * 900_000)


def _scheme_characters_of_a_mib_are_not_a_credential() -> None:
    assert not is_credential_value("a1" * (512 * 1024))
    assert not is_credential_value("a" * (1024 * 1024) + ":a")


def _env_values_of_32_kib_are_not_credentials() -> None:
    assert not any(is_credential_value(letter * 32 * 1024) for letter in "abcdefgh")


def _a_url_with_a_password_after_a_mib_of_letters_is_still_a_credential() -> None:
    assert is_credential_value("a" * (1024 * 1024) + " postgres://u:p@h/db")
    assert is_credential_value("x1" * (512 * 1024) + "://u:p@h/db")


@pytest.mark.parametrize(
    "check",
    [
        _letters_of_900_kb_are_not_a_credential,
        _scheme_characters_of_a_mib_are_not_a_credential,
        _env_values_of_32_kib_are_not_credentials,
        _a_url_with_a_password_after_a_mib_of_letters_is_still_a_credential,
    ],
)
def test_long_values_are_checked_for_a_url_password_without_hanging(check: Callable[[], None]) -> None:
    """Hang check, not a speed goal (R-7.3): the URL-with-password search used to restart at every
    letter and backtrack over the whole run (`"a" * 900_000` in an import: over 5 minutes; each
    server view with 32 KiB env values: seconds, on the event loop). The check is still exact: a
    long value is not cut short. Fails only if it has not returned after `HANG_BOUND_S` seconds."""
    assert_returns(check)


@pytest.mark.parametrize(
    "value",
    ["1abc://u:p@h", "a+1.b-c://u:p:q@h", "git+ssh://u:p@h", "x 9z://u:p@h", "a-1://u:p@h"],
)
def test_a_url_with_a_password_is_found_wherever_its_scheme_starts(value: str) -> None:
    assert is_credential_value(value)


@pytest.mark.parametrize("value", ["1://u:p@h", "+1-://u:p@h", "a://u@h", "a://u:@h", "a://:p/@h"])
def test_no_scheme_letter_no_password_or_a_slash_is_not_a_url_with_a_password(value: str) -> None:
    assert not is_credential_value(value)


@pytest.mark.parametrize(
    ("args", "found"),
    [
        (["--token", "ghp_invented0001"], [1]),
        (["--api-key=sk-invented-0002"], [0]),
        (["-e", "GITHUB_PERSONAL_ACCESS_TOKEN=ghp_invented0003", "ghcr.io/github/github-mcp-server"], [1]),
        (["--password", "hunter2", "--port", "5432"], [1]),
        (["postgres://bob:hunter2@localhost/db"], [0]),
        (["--header", "Bearer abc.def"], [1]),
    ],
)
def test_a_credential_given_as_an_option_value_or_an_assignment_is_found(args: list[str], found: list[int]) -> None:
    """`--token VALUE`, `--api-key=VALUE`, `NAME_TOKEN=VALUE` (docker -e): the value is a credential by
    its option's name, as an env var is by its own (R-1.5)."""
    assert credential_args(args) == found


@pytest.mark.parametrize(
    "args",
    [
        ["--token"],
        ["--token", "--verbose"],
        ["--token="],
        ["--token-file", "/run/secrets/token"],
        ["--api-key-env", "OPENAI_API_KEY"],
        ["-y", "@modelcontextprotocol/server-github"],
        ["--keyspace", "main"],
        ["-e", "GITHUB_PERSONAL_ACCESS_TOKEN"],
    ],
)
def test_options_that_only_name_where_a_credential_is_are_not_credentials(args: list[str]) -> None:
    assert credential_args(args) == []
