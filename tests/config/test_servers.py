"""Unit tests for server configuration validation (SPEC R-1.1, R-1.6, R-1.7, R-2.6)."""

from __future__ import annotations

import string
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from mcp_center.config import (
    RESERVED_HEADERS,
    AuthBearer,
    AuthOAuth,
    OAuthBinding,
    SseServerConfig,
    StdioServerConfig,
    StreamableHttpServerConfig,
    check_url,
    is_loopback_host,
    parse_server_config,
    slugify,
)
from mcp_center.config.servers import ID_PATTERN
from mcp_center.errors import ConfigInvalid

REMOTE_TRANSPORTS = ["streamable_http", "sse"]


def stdio(**overrides: Any) -> dict[str, Any]:
    """A valid stdio configuration with `overrides` applied."""
    return {"id": "files", "name": "Files", "transport": "stdio", "command": "npx", "args": ["-y", "pkg"], **overrides}


def remote(**overrides: Any) -> dict[str, Any]:
    """A valid Streamable HTTP configuration with `overrides` applied."""
    return {
        "id": "remote",
        "name": "Remote",
        "transport": "streamable_http",
        "url": "https://mcp.example.com/mcp",
        **overrides,
    }


def rejected(data: dict[str, Any]) -> ConfigInvalid:
    with pytest.raises(ConfigInvalid) as caught:
        parse_server_config(data)
    return caught.value


def pairs(error: ConfigInvalid) -> list[tuple[str, str]]:
    return [(e.field, e.code) for e in error.errors]


def assert_only_error(data: dict[str, Any], field: str, code: str) -> None:
    """`data` is refused with exactly one error, on `field` with `code`, and the message names the field."""
    error = rejected(data)
    assert pairs(error) == [(field, code)]
    assert field in error.message
    assert error.code == "CONFIG_INVALID"
    assert error.details["errors"] == [e.to_dict() for e in error.errors]


# ----- URL rules (R-1.6) ------------------------------------------------------------------------


@pytest.mark.parametrize("transport", REMOTE_TRANSPORTS)
@pytest.mark.parametrize(
    ("url", "code"),
    [
        pytest.param("http://user:pw@127.0.0.1/mcp", "URL_HAS_CREDENTIALS", id="user-and-password"),
        pytest.param("https://tok@mcp.example.com/", "URL_HAS_CREDENTIALS", id="token-as-user"),
        pytest.param("https://:pw@mcp.example.com/", "URL_HAS_CREDENTIALS", id="password-only"),
        pytest.param("https://mcp.example.com/mcp#section", "URL_HAS_FRAGMENT", id="fragment"),
        pytest.param("https://mcp.example.com/mcp#", "URL_HAS_FRAGMENT", id="empty-fragment"),
        pytest.param("ftp://mcp.example.com/mcp", "URL_SCHEME_NOT_ALLOWED", id="ftp"),
        pytest.param("file:///etc/passwd", "URL_SCHEME_NOT_ALLOWED", id="file"),
        pytest.param("ws://127.0.0.1/mcp", "URL_SCHEME_NOT_ALLOWED", id="websocket"),
        pytest.param("mcp.example.com/mcp", "URL_SCHEME_NOT_ALLOWED", id="no-scheme"),
        pytest.param("http://mcp.example.com/mcp", "URL_HTTPS_REQUIRED", id="http-remote-name"),
        pytest.param("http://10.0.0.5/mcp", "URL_HTTPS_REQUIRED", id="http-private-ip"),
        pytest.param("http://localhost.example.com/mcp", "URL_HTTPS_REQUIRED", id="http-localhost-lookalike"),
        pytest.param("http://127.0.0.1.nip.io/mcp", "URL_HTTPS_REQUIRED", id="http-loopback-lookalike"),
        pytest.param("https:///mcp", "URL_INVALID", id="no-host"),
        pytest.param("http://:8080/mcp", "URL_INVALID", id="port-but-no-host"),
        pytest.param("https://mcp.example.com/a b", "URL_INVALID", id="space-in-path"),
        pytest.param(" https://mcp.example.com/mcp", "URL_INVALID", id="leading-space"),
        pytest.param("https://mcp.example.com/mcp\n", "URL_INVALID", id="newline"),
        pytest.param("https://mcp.example.com:99999/mcp", "URL_INVALID", id="port-out-of-range"),
        pytest.param("https://mcp.example.com:0/mcp", "URL_INVALID", id="port-zero"),
        pytest.param("http://[::1/mcp", "URL_INVALID", id="broken-ipv6"),
        pytest.param("https://mcp.example.com/" + "a" * 2100, "URL_INVALID", id="too-long"),
    ],
)
def test_a_bad_url_is_refused_with_its_code_on_the_url_field(transport: str, url: str, code: str) -> None:
    assert_only_error(remote(transport=transport, url=url), "url", code)


@pytest.mark.parametrize("transport", REMOTE_TRANSPORTS)
@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1/mcp",
        "http://127.0.0.1:8080/mcp",
        "http://127.8.9.1/mcp",
        "http://localhost/mcp",
        "http://localhost:3000/mcp",
        "http://LOCALHOST/mcp",
        "http://[::1]/mcp",
        "http://[::1]:8080/mcp",
        "https://mcp.example.com/mcp",
        "https://mcp.example.com:8443/v1/mcp?tenant=a",
        "https://10.0.0.5/mcp",
    ],
)
def test_https_urls_and_plain_http_to_loopback_hosts_are_accepted(transport: str, url: str) -> None:
    config = parse_server_config(remote(transport=transport, url=url))
    assert isinstance(config, StreamableHttpServerConfig | SseServerConfig)
    assert config.url == url


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("localhost", True),
        ("LocalHost", True),
        ("localhost.", True),
        ("127.0.0.1", True),
        ("127.255.255.254", True),
        ("::1", True),
        ("[::1]", True),
        ("128.0.0.1", False),
        ("0.0.0.0", False),
        ("::", False),
        ("10.0.0.1", False),
        ("example.com", False),
        ("localhost.example.com", False),
        ("", False),
    ],
)
def test_only_localhost_127_0_0_0_8_and_ipv6_loopback_count_as_loopback(host: str, loopback: bool) -> None:
    assert is_loopback_host(host) is loopback


def test_check_url_reports_under_the_path_it_is_given() -> None:
    errors = list(check_url("auth.binding.resource", "http://user@mcp.example.com/#x"))
    assert {(e.field, e.code) for e in errors} == {
        ("auth.binding.resource", "URL_HAS_CREDENTIALS"),
        ("auth.binding.resource", "URL_HAS_FRAGMENT"),
        ("auth.binding.resource", "URL_HTTPS_REQUIRED"),
    }


# ----- header rules (R-1.7) ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "Host",
        "host",
        "Content-Type",
        "content-type",
        "CONTENT-TYPE",
        "Content-Length",
        "Accept",
        "Connection",
        "Mcp-Session-Id",
        "mcp-session-id",
        "MCP-Protocol-Version",
        "Last-Event-ID",
        "last-event-id",
        "Transfer-Encoding",
    ],
)
@pytest.mark.parametrize("auth_kind", ["none", "bearer", "oauth"])
def test_protocol_reserved_headers_are_refused_in_plain_headers_whatever_the_auth(name: str, auth_kind: str) -> None:
    assert_only_error(remote(headers={name: "x"}, auth={"kind": auth_kind}), f"headers.{name}", "HEADER_RESERVED")


@pytest.mark.parametrize("name", ["Host", "content-type", "Mcp-Session-Id", "MCP-Protocol-Version", "Last-Event-ID"])
def test_protocol_reserved_headers_are_refused_as_secret_headers(name: str) -> None:
    assert_only_error(remote(secret_headers=[name]), f"secret_headers.{name}", "HEADER_RESERVED")


def test_reserved_header_set_covers_every_header_named_in_r_1_7() -> None:
    named = {
        "host",
        "content-type",
        "content-length",
        "accept",
        "mcp-session-id",
        "mcp-protocol-version",
        "last-event-id",
        "connection",
        "transfer-encoding",
    }
    assert named <= RESERVED_HEADERS


@pytest.mark.parametrize("auth_kind", ["bearer", "oauth"])
@pytest.mark.parametrize("spelling", ["Authorization", "authorization", "AUTHORIZATION"])
def test_authorization_header_is_refused_when_auth_is_managed(auth_kind: str, spelling: str) -> None:
    assert_only_error(
        remote(headers={spelling: "Bearer x"}, auth={"kind": auth_kind}), f"headers.{spelling}", "HEADER_RESERVED"
    )
    assert_only_error(
        remote(secret_headers=[spelling], auth={"kind": auth_kind}), f"secret_headers.{spelling}", "HEADER_RESERVED"
    )
    # ... and says where a bearer token goes instead (a new-user trial could not tell).
    assert (
        "the secret 'token' of kind 'bearer'"
        in rejected(remote(secret_headers=[spelling], auth={"kind": auth_kind})).message
    )


def test_authorization_header_is_allowed_when_auth_is_none() -> None:
    plain = parse_server_config(remote(headers={"Authorization": "Basic abc"}, auth={"kind": "none"}))
    secret = parse_server_config(remote(secret_headers=["Authorization"]))
    assert isinstance(plain, StreamableHttpServerConfig)
    assert plain.headers == {"Authorization": "Basic abc"}
    assert isinstance(secret, StreamableHttpServerConfig)
    assert secret.secret_headers == ["Authorization"]


@pytest.mark.parametrize(
    ("data", "field"),
    [
        pytest.param(
            remote(headers={"X-Api-Key": "a"}, secret_headers=["x-api-key"]),
            "secret_headers.x-api-key",
            id="plain-and-secret",
        ),
        pytest.param(remote(headers={"X-Trace": "1", "x-trace": "2"}), "headers.x-trace", id="twice-in-plain"),
        pytest.param(remote(secret_headers=["X-Key", "X-KEY"]), "secret_headers.X-KEY", id="twice-in-secret"),
    ],
)
def test_a_header_name_given_twice_case_insensitively_is_refused(data: dict[str, Any], field: str) -> None:
    assert_only_error(data, field, "HEADER_DUPLICATE")


@pytest.mark.parametrize(
    "value",
    [
        pytest.param("a\r\nX-Injected: 1", id="crlf"),
        pytest.param("a\nb", id="lf"),
        pytest.param("a\rb", id="cr"),
        pytest.param("a\x00b", id="nul"),
        pytest.param("a\x7fb", id="del"),
        pytest.param("a" * (8 * 1024 + 1), id="too-long"),
    ],
)
def test_a_header_value_with_line_breaks_or_controls_is_refused(value: str) -> None:
    assert_only_error(remote(headers={"X-Custom": value}), "headers.X-Custom", "HEADER_VALUE_INVALID")


def test_a_header_value_with_a_tab_is_accepted() -> None:
    config = parse_server_config(remote(headers={"X-Custom": "a\tb"}))
    assert isinstance(config, StreamableHttpServerConfig)
    assert config.headers["X-Custom"] == "a\tb"


@pytest.mark.parametrize("name", ["X Bad", "X:Y", "", "X-\u00e9", "X\nY"])
def test_a_header_name_that_is_not_an_http_token_is_refused(name: str) -> None:
    assert_only_error(remote(headers={name: "v"}), f"headers.{name}", "HEADER_NAME_INVALID")


# ----- stdio rules (R-2.6) ----------------------------------------------------------------------


@pytest.mark.parametrize("command", ["", " ", "\t  "])
def test_an_empty_or_blank_command_is_refused(command: str) -> None:
    assert_only_error(stdio(command=command), "command", "COMMAND_EMPTY")


@pytest.mark.parametrize(
    "command",
    ["npx foo | sh", "npx -y pkg", "echo hi; rm -rf /", "$(curl evil)", "server > log", "a && b", "`id`"],
)
def test_a_shell_command_line_is_refused_because_no_shell_runs_it(command: str) -> None:
    assert_only_error(stdio(command=command), "command", "COMMAND_NOT_A_PROGRAM")


def test_a_program_path_with_spaces_is_accepted_when_the_file_exists(tmp_path: Path) -> None:
    program = tmp_path / "My Tools" / "mcp server"
    program.parent.mkdir()
    program.write_text("#!/bin/sh\n")
    config = parse_server_config(stdio(command=str(program)))
    assert isinstance(config, StdioServerConfig)
    assert config.command == str(program)


def test_a_program_path_with_spaces_is_refused_when_nothing_is_there(tmp_path: Path) -> None:
    assert_only_error(stdio(command=str(tmp_path / "My Tools" / "missing")), "command", "COMMAND_NOT_A_PROGRAM")


@pytest.mark.parametrize("command", ["npx\x00", "npx\n", "np\rx"])
def test_a_command_with_nul_or_line_breaks_is_refused(command: str) -> None:
    assert_only_error(stdio(command=command), "command", "COMMAND_INVALID")


def test_an_argument_with_nul_is_refused_at_its_index() -> None:
    assert_only_error(stdio(args=["-y", "pkg\x00--evil"]), "args.1", "ARGS_INVALID")


def test_shell_syntax_inside_arguments_is_plain_text_and_accepted() -> None:
    config = parse_server_config(stdio(args=["|", "sh", ";", "$(id)", "> out"]))
    assert isinstance(config, StdioServerConfig)
    assert config.args == ["|", "sh", ";", "$(id)", "> out"]


def test_too_many_arguments_are_refused() -> None:
    assert ("args", "ARGS_INVALID") in pairs(rejected(stdio(args=["x"] * 257)))


@pytest.mark.parametrize("cwd", ["relative/dir", ".", "~/work"])
def test_a_relative_working_directory_is_refused(cwd: str) -> None:
    assert_only_error(stdio(cwd=cwd), "cwd", "CWD_INVALID")


def test_an_absolute_working_directory_is_accepted(tmp_path: Path) -> None:
    config = parse_server_config(stdio(cwd=str(tmp_path)))
    assert isinstance(config, StdioServerConfig)
    assert config.cwd == str(tmp_path)


@pytest.mark.parametrize("name", ["1ABC", "A-B", "A B", "", "A=B", "\u00c9T\u00c9"])
def test_a_malformed_env_name_is_refused(name: str) -> None:
    assert_only_error(stdio(env={name: "v"}), f"env.{name}", "ENV_NAME_INVALID")


@pytest.mark.parametrize("name", ["1ABC", "A-B", ""])
def test_a_malformed_secret_env_name_is_refused(name: str) -> None:
    assert_only_error(stdio(secret_env=[name]), f"secret_env.{name}", "ENV_NAME_INVALID")


def test_an_env_name_that_is_both_plain_and_secret_is_refused() -> None:
    assert_only_error(
        stdio(env={"API_TOKEN": "plain"}, secret_env=["API_TOKEN"]), "secret_env.API_TOKEN", "ENV_DUPLICATE"
    )


def test_a_secret_env_name_listed_twice_is_refused() -> None:
    assert_only_error(stdio(secret_env=["API_TOKEN", "API_TOKEN"]), "secret_env.API_TOKEN", "ENV_DUPLICATE")


def test_an_env_value_with_nul_is_refused() -> None:
    assert_only_error(stdio(env={"MODE": "a\x00b"}), "env.MODE", "ENV_VALUE_INVALID")


def test_valid_env_names_and_values_are_accepted() -> None:
    config = parse_server_config(stdio(env={"_X": "", "PATH_2": "a b|c"}, secret_env=["GITHUB_TOKEN"]))
    assert isinstance(config, StdioServerConfig)
    assert config.env == {"_X": "", "PATH_2": "a b|c"}
    assert config.secret_env == ["GITHUB_TOKEN"]


# ----- shape rules (pydantic) -------------------------------------------------------------------


def test_an_unknown_field_is_refused_by_name() -> None:
    assert_only_error(stdio(colour="blue"), "colour", "FIELD_UNKNOWN")


def test_a_remote_server_without_url_is_refused() -> None:
    data = remote()
    del data["url"]
    assert_only_error(data, "url", "FIELD_REQUIRED")


def test_a_stdio_server_without_command_is_refused() -> None:
    data = stdio()
    del data["command"]
    assert_only_error(data, "command", "FIELD_REQUIRED")


@pytest.mark.parametrize("transport", ["grpc", "http", "STDIO", 3])
def test_an_unknown_transport_is_refused_on_the_transport_field(transport: object) -> None:
    assert_only_error(remote(transport=transport), "transport", "FIELD_INVALID")


def test_a_missing_transport_is_reported_on_the_transport_field() -> None:
    data = remote()
    del data["transport"]
    assert [e.field for e in rejected(data).errors] == ["transport"]


@pytest.mark.parametrize("auth", [{"kind": "basic"}, {"kind": "BEARER"}, {}])
def test_an_unknown_auth_kind_is_refused_on_auth_kind(auth: dict[str, Any]) -> None:
    assert_only_error(remote(auth=auth), "auth.kind", "FIELD_INVALID")


def test_auth_on_a_stdio_server_is_an_unknown_field() -> None:
    assert_only_error(stdio(auth={"kind": "bearer"}), "auth", "FIELD_UNKNOWN")


def test_url_on_a_stdio_server_is_an_unknown_field() -> None:
    assert_only_error(stdio(url="https://mcp.example.com/mcp"), "url", "FIELD_UNKNOWN")


def test_an_unknown_oauth_field_is_refused_with_its_dotted_path() -> None:
    assert_only_error(remote(auth={"kind": "oauth", "client_secret": "x"}), "auth.client_secret", "FIELD_UNKNOWN")


def test_a_bearer_token_pasted_into_auth_is_an_unknown_field_of_auth() -> None:
    assert_only_error(remote(auth={"kind": "bearer", "token": "sk-123"}), "auth.token", "FIELD_UNKNOWN")


def test_an_incomplete_oauth_binding_names_the_missing_field() -> None:
    auth = {"kind": "oauth", "binding": {"resource": "https://mcp.example.com/mcp"}}
    assert_only_error(remote(auth=auth), "auth.binding.issuer", "FIELD_REQUIRED")


def test_a_pasted_bearer_token_does_not_appear_in_the_error() -> None:
    error = rejected(remote(auth={"kind": "bearer", "token": "sk-pasted-secret-value"}))
    assert "sk-pasted-secret-value" not in str(error)
    assert "sk-pasted-secret-value" not in repr(error.details)


def test_a_non_string_env_value_is_refused_with_its_dotted_path() -> None:
    assert_only_error(stdio(env={"PORT": 8080}), "env.PORT", "FIELD_INVALID")


def test_an_unknown_tool_policy_is_refused_with_the_tool_in_the_path() -> None:
    assert_only_error(stdio(tool_policies={"delete_repo": "maybe"}), "tool_policies.delete_repo", "FIELD_INVALID")


def test_an_empty_disabled_tool_name_is_refused_at_its_index() -> None:
    assert_only_error(stdio(disabled_tools=["ok", ""]), "disabled_tools.1", "FIELD_INVALID")


@pytest.mark.parametrize(
    ("auth", "field", "code"),
    [
        ({"kind": "oauth", "scopes": ["read write"]}, "auth.scopes.0", "SCOPE_INVALID"),
        ({"kind": "oauth", "scopes": ["read", ""]}, "auth.scopes.1", "SCOPE_INVALID"),
        ({"kind": "oauth", "client_id": ""}, "auth.client_id", "FIELD_INVALID"),
        ({"kind": "oauth", "client_id": "a\nb"}, "auth.client_id", "FIELD_INVALID"),
        ({"kind": "oauth", "client_id": "c" * 256}, "auth.client_id", "FIELD_INVALID"),
    ],
)
def test_malformed_oauth_settings_are_refused(auth: dict[str, Any], field: str, code: str) -> None:
    assert_only_error(remote(auth=auth), field, code)


@pytest.mark.parametrize(
    ("auth", "field", "code"),
    [
        ({"grant": "client_credentials"}, "auth.client_id", "FIELD_REQUIRED"),
        ({"grant": "cross_app_access", "client_id": "c"}, "auth.idp_token_endpoint", "FIELD_REQUIRED"),
        ({"grant": "device_code"}, "auth.grant", "FIELD_INVALID"),
        ({"token_endpoint_auth_method": "private_key_jwt"}, "auth.token_endpoint_auth_method", "FIELD_INVALID"),
        ({"jwt_signing_algorithm": "ES256"}, "auth.jwt_signing_algorithm", "FIELD_INVALID"),
        (
            {"client_metadata_url": "http://host.example.com/cimd.json"},
            "auth.client_metadata_url",
            "URL_HTTPS_REQUIRED",
        ),
        ({"client_metadata_url": "https://host.example.com/"}, "auth.client_metadata_url", "CIMD_URL_INVALID"),
        ({"client_metadata_url": "https://host.example.com/c?x=1"}, "auth.client_metadata_url", "CIMD_URL_INVALID"),
        (
            {"client_id": "c", "client_metadata_url": "https://host.example.com/c.json"},
            "auth.client_metadata_url",
            "FIELD_INVALID",
        ),
        (
            {"grant": "client_credentials", "client_id": "c", "legacy_endpoint_fallback": True},
            "auth.legacy_endpoint_fallback",
            "FIELD_INVALID",
        ),
        ({"idp_token_endpoint": "https://idp.example.com/token"}, "auth.idp_token_endpoint", "FIELD_INVALID"),
        (
            {"grant": "cross_app_access", "client_id": "c", "idp_token_endpoint": "http://idp.example.com/token"},
            "auth.idp_token_endpoint",
            "URL_HTTPS_REQUIRED",
        ),
        (
            {"binding": {"resource": "https://mcp.example.com/mcp", "issuer": "http://as.example.com"}},
            "auth.binding.issuer",
            "URL_HTTPS_REQUIRED",
        ),
        ({"client_secret": "pasted-into-config"}, "auth.client_secret", "FIELD_UNKNOWN"),
    ],
)
def test_incoherent_oauth_grant_settings_are_refused_on_the_field_at_fault(
    auth: dict[str, Any], field: str, code: str
) -> None:
    """R-4 settings are checked together: a grant's required fields, https URLs, CIMD shape (R-4.10)."""
    assert_only_error(remote(auth={"kind": "oauth", **auth}), field, code)


def test_every_oauth_grant_has_a_valid_minimal_configuration() -> None:
    machine = parse_server_config(remote(auth={"kind": "oauth", "grant": "client_credentials", "client_id": "m"}))
    assert isinstance(machine, StreamableHttpServerConfig)
    assert isinstance(machine.auth, AuthOAuth)
    assert machine.auth.grant == "client_credentials"
    jwt_auth = {
        "kind": "oauth",
        "grant": "client_credentials",
        "client_id": "m",
        "token_endpoint_auth_method": "private_key_jwt",
        "jwt_signing_algorithm": "ES256",
    }
    parse_server_config(remote(auth=jwt_auth))
    cross = {
        "kind": "oauth",
        "grant": "cross_app_access",
        "client_id": "c",
        "idp_token_endpoint": "https://idp.example.com/t",
    }
    parse_server_config(remote(auth=cross))
    legacy = parse_server_config(remote(auth={"kind": "oauth", "legacy_endpoint_fallback": True}))
    assert isinstance(legacy, StreamableHttpServerConfig)
    assert isinstance(legacy.auth, AuthOAuth)
    assert legacy.auth.legacy_endpoint_fallback is True
    assert AuthOAuth().legacy_endpoint_fallback is False


# ----- id, name, timeouts -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "server_id", ["MyServer", "-server", "server-", "a" * 33, "", "my_server", "my.server", "my server", "caf\u00e9"]
)
def test_an_id_outside_the_slug_rules_is_refused(server_id: str) -> None:
    assert_only_error(stdio(id=server_id), "id", "ID_INVALID")


@pytest.mark.parametrize("server_id", ["a", "0", "my-server-2", "a" * 32, "a--b"])
def test_a_slug_id_is_accepted(server_id: str) -> None:
    assert parse_server_config(stdio(id=server_id)).id == server_id


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("", id="empty"),
        pytest.param("   ", id="blank"),
        pytest.param("bell\x07", id="c0-control"),
        pytest.param("line\nbreak", id="newline"),
        pytest.param("next\x85line", id="c1-control"),
        pytest.param("evil\u202egnp.exe", id="bidi-override"),
        pytest.param("para\u2029graph", id="paragraph-separator"),
        pytest.param("x" * 101, id="too-long"),
    ],
)
def test_an_empty_or_unprintable_name_is_refused(name: str) -> None:
    assert_only_error(stdio(name=name), "name", "NAME_INVALID")


@pytest.mark.parametrize("name", ["Files (local)", "Caf\u00e9 \u2615", "x" * 100, "GitHub \u2014 official"])
def test_a_printable_name_is_accepted(name: str) -> None:
    assert parse_server_config(stdio(name=name)).name == name


@pytest.mark.parametrize("value", [0, 0.5, -1, 3600.5, 3601])
def test_a_call_timeout_outside_1_to_3600_seconds_is_refused(value: float) -> None:
    assert_only_error(stdio(call_timeout_s=value), "call_timeout_s", "FIELD_INVALID")


@pytest.mark.parametrize("value", [1, 60, 3600])
def test_a_call_timeout_inside_1_to_3600_seconds_is_accepted(value: float) -> None:
    assert parse_server_config(stdio(call_timeout_s=value)).call_timeout_s == value


@pytest.mark.parametrize("value", [0, 601])
def test_a_startup_timeout_outside_1_to_600_seconds_is_refused(value: float) -> None:
    assert_only_error(stdio(startup_timeout_s=value), "startup_timeout_s", "FIELD_INVALID")


def test_startup_timeout_defaults_to_60_s_for_stdio_and_30_s_for_remote_servers() -> None:
    assert parse_server_config(stdio()).effective_startup_timeout_s == 60.0
    assert parse_server_config(remote()).effective_startup_timeout_s == 30.0
    assert parse_server_config(remote(transport="sse")).effective_startup_timeout_s == 30.0


def test_an_explicit_startup_timeout_wins_over_the_default() -> None:
    assert parse_server_config(stdio(startup_timeout_s=5)).effective_startup_timeout_s == 5.0
    assert parse_server_config(remote(startup_timeout_s=120)).effective_startup_timeout_s == 120.0


# ----- several errors, round trips --------------------------------------------------------------


def test_every_rule_broken_by_a_stdio_config_is_listed_at_once() -> None:
    error = rejected(
        stdio(
            id="Bad_Id",
            name="",
            command="npx foo | sh",
            args=["ok", "\x00"],
            cwd="rel",
            env={"1X": "v", "TOKEN": "p"},
            secret_env=["TOKEN"],
        )
    )
    assert set(pairs(error)) == {
        ("id", "ID_INVALID"),
        ("name", "NAME_INVALID"),
        ("command", "COMMAND_NOT_A_PROGRAM"),
        ("args.1", "ARGS_INVALID"),
        ("cwd", "CWD_INVALID"),
        ("env.1X", "ENV_NAME_INVALID"),
        ("secret_env.TOKEN", "ENV_DUPLICATE"),
    }
    assert len(error.details["errors"]) == 7
    assert "and 6 more" in error.message


def test_every_rule_broken_by_a_remote_config_is_listed_at_once() -> None:
    error = rejected(
        remote(
            url="http://user:pw@mcp.example.com/mcp#x",
            headers={"Host": "evil", "Authorization": "Bearer x", "X-A": "a\r\nb"},
            secret_headers=["x-a"],
            auth={"kind": "bearer"},
        )
    )
    assert set(pairs(error)) == {
        ("url", "URL_HAS_CREDENTIALS"),
        ("url", "URL_HAS_FRAGMENT"),
        ("url", "URL_HTTPS_REQUIRED"),
        ("headers.Host", "HEADER_RESERVED"),
        ("headers.Authorization", "HEADER_RESERVED"),
        ("headers.X-A", "HEADER_VALUE_INVALID"),
        ("secret_headers.x-a", "HEADER_DUPLICATE"),
    }


def test_every_shape_error_is_listed_at_once() -> None:
    data = stdio(colour="blue", call_timeout_s=0)
    del data["command"]
    assert set(pairs(rejected(data))) == {
        ("command", "FIELD_REQUIRED"),
        ("colour", "FIELD_UNKNOWN"),
        ("call_timeout_s", "FIELD_INVALID"),
    }


STDIO_FULL = stdio(
    cwd="/srv/mcp",
    env={"MODE": "ro"},
    secret_env=["GITHUB_TOKEN"],
    disabled_tools=["delete_repo"],
    tool_policies={"read_file": "allow", "write_file": "deny"},
    connect_on_startup=False,
    call_timeout_s=120,
    startup_timeout_s=90,
)
HTTP_FULL = remote(
    headers={"X-Tenant": "acme"},
    secret_headers=["X-Api-Key"],
    auth={
        "kind": "oauth",
        "client_id": "client-1",
        "scopes": ["read", "write"],
        "binding": {"resource": "https://mcp.example.com/mcp", "issuer": "https://auth.example.com"},
    },
)
SSE_FULL = remote(transport="sse", url="http://127.0.0.1:9000/sse", auth={"kind": "bearer"}, disabled_tools=["x"])


@pytest.mark.parametrize("data", [STDIO_FULL, HTTP_FULL, SSE_FULL], ids=["stdio", "streamable_http", "sse"])
def test_a_valid_config_round_trips_through_its_json_dump(data: dict[str, Any]) -> None:
    config = parse_server_config(data)
    dumped = config.model_dump(mode="json")
    again = parse_server_config(dumped)
    assert again == config
    assert type(again) is type(config)
    assert dumped["transport"] == data["transport"]


def test_parsed_configs_have_the_model_of_their_transport() -> None:
    oauth = parse_server_config(HTTP_FULL)
    bearer = parse_server_config(SSE_FULL)
    assert isinstance(parse_server_config(STDIO_FULL), StdioServerConfig)
    assert isinstance(oauth, StreamableHttpServerConfig)
    assert isinstance(oauth.auth, AuthOAuth)
    assert oauth.auth.binding == OAuthBinding(resource="https://mcp.example.com/mcp", issuer="https://auth.example.com")
    assert isinstance(bearer, SseServerConfig)
    assert isinstance(bearer.auth, AuthBearer)


def test_defaults_are_filled_in_for_a_minimal_config() -> None:
    config = parse_server_config({"id": "m", "name": "M", "transport": "stdio", "command": "uvx"})
    assert isinstance(config, StdioServerConfig)
    assert config.args == []
    assert config.env == {}
    assert config.connect_on_startup is True
    assert config.call_timeout_s == 60.0
    remote_config = parse_server_config(remote())
    assert isinstance(remote_config, StreamableHttpServerConfig)
    assert remote_config.auth.kind == "none"


def test_a_parsed_config_is_frozen() -> None:
    config = parse_server_config(stdio())
    with pytest.raises(ValidationError):
        config.command = "sh"  # pyright: ignore[reportAttributeAccessIssue]  # on purpose: frozen, and a union member lacks it


# ----- slugify ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "slug"),
    [
        ("My Server", "my-server"),
        ("  GitHub (Official)!! ", "github-official"),
        ("files_v2", "files-v2"),
        ("Caf\u00e9 Tools", "cafe-tools"),  # it was "caf-tools": the accented letter was dropped
        ("Stra\u00dfe \u00c6on \u0141\u00f3d\u017a", "strasse-aeon-lodz"),
        (
            "\uff26\uff55\uff4c\uff4c\uff57\uff49\uff44\uff54\uff48 \u2460",
            "fullwidth-1",
        ),  # NFKD folds compatibility forms
        ("\u4e2d\u6587 docs", "docs"),
        ("\U0001d406\U0001d422\U0001d42d\U0001d407\U0001d42e\U0001d41b", "github"),  # was "it-ub": NFKD gave capitals
        ("\u211d Stats", "r-stats"),  # was "stats"
        ("\u0126\u0167 \u014a\u00b5", "ht-nu"),  # folded like \u00df and \u0142 (they were dropped)
        ("---", "server"),
        ("", "server"),
        ("\u4e2d\u6587", "server"),
        ("a" * 40, "a" * 32),
        ("a" * 31 + " b", "a" * 31),
    ],
)
def test_slugify_derives_a_lowercase_dashed_id_from_a_name(name: str, slug: str) -> None:
    assert slugify(name) == slug


@given(st.text(alphabet=string.printable + "\u00e9\u4e2d\u2014\u00df\u0141\uff21\u2460\ufb01", max_size=80))
def test_slugify_always_returns_a_valid_server_id(name: str) -> None:
    assert ID_PATTERN.fullmatch(slugify(name))
