"""Unit tests for host settings: explicit > environment > default, and validation (R-2.5, R-7.2)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import platformdirs
import pytest

from mcp_center.config import Profile, Settings
from mcp_center.config.settings import DEFAULT_PORT, database_display
from mcp_center.errors import RequestInvalid, SettingInvalid


def refused(field: str, load: Callable[[], Settings]) -> RequestInvalid:
    """`load()` must be refused; check the stable code and that the error names `field`."""
    with pytest.raises(SettingInvalid) as caught:
        load()
    error = caught.value
    assert isinstance(error, RequestInvalid)  # what library callers caught before SETTING_INVALID
    assert error.code == "SETTING_INVALID"
    assert [(e["field"], e["code"]) for e in error.details["errors"]] == [(field, "SETTING_INVALID")]
    assert field in error.message
    return error


def test_defaults_apply_when_neither_arguments_nor_environment_are_given(tmp_path: Path) -> None:
    settings = Settings.load(data_dir=tmp_path, environ={})
    assert settings.data_dir == tmp_path.resolve()
    assert settings.host == "127.0.0.1"
    assert settings.port == DEFAULT_PORT == 8765
    assert settings.profile is Profile.LOCAL
    assert settings.public_url is None
    assert settings.allowed_hosts == ()
    assert settings.admin_token is None
    assert settings.secret_key is None
    assert settings.base_url == "http://127.0.0.1:8765"


def test_the_data_dir_defaults_to_the_platform_user_data_dir() -> None:
    settings = Settings.load(environ={})
    assert settings.data_dir == Path(platformdirs.user_data_dir("mcp-center")).resolve()


def test_the_mcp_dir_is_inside_the_data_dir(tmp_path: Path) -> None:
    assert Settings.load(data_dir=tmp_path, environ={}).mcp_dir == tmp_path.resolve() / "mcp"


def test_a_relative_data_dir_is_made_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    settings = Settings.load(data_dir="rel/data", environ={})
    assert settings.data_dir == tmp_path.resolve() / "rel" / "data"
    assert settings.data_dir.is_absolute()


ENVIRON = {
    "MCP_CENTER_DATA_DIR": "/srv/from-env",
    "MCP_CENTER_HOST": "10.1.2.3",
    "MCP_CENTER_PORT": "9000",
    "MCP_CENTER_PROFILE": "production",
    "MCP_CENTER_PUBLIC_URL": "https://env.example.com/",
    "MCP_CENTER_ADMIN_TOKEN": "admin-token-from-env-0123",
    "MCP_CENTER_SECRET_KEY": "key-from-env",
}


def test_the_environment_wins_over_defaults() -> None:
    settings = Settings.load(environ=ENVIRON)
    assert settings.data_dir == Path("/srv/from-env").resolve()
    assert settings.host == "10.1.2.3"
    assert settings.port == 9000
    assert settings.profile is Profile.PRODUCTION
    assert settings.public_url == "https://env.example.com"
    assert settings.admin_token == "admin-token-from-env-0123"
    assert settings.secret_key == "key-from-env"


def test_explicit_arguments_win_over_the_environment(tmp_path: Path) -> None:
    settings = Settings.load(
        data_dir=tmp_path,
        host="127.0.0.2",
        port=9100,
        profile="local",
        public_url="https://flag.example.com",
        environ=ENVIRON,
    )
    assert settings.data_dir == tmp_path.resolve()
    assert settings.host == "127.0.0.2"
    assert settings.port == 9100
    assert settings.profile is Profile.LOCAL
    assert settings.public_url == "https://flag.example.com"


def test_an_explicit_port_zero_wins_over_the_environment(tmp_path: Path) -> None:
    assert Settings.load(data_dir=tmp_path, port=0, environ={"MCP_CENTER_PORT": "9000"}).port == 0


def test_empty_environment_values_fall_back_to_defaults(tmp_path: Path) -> None:
    environ = dict.fromkeys(ENVIRON, "") | {"MCP_CENTER_DATA_DIR": str(tmp_path)}
    settings = Settings.load(environ=environ)
    assert settings.host == "127.0.0.1"
    assert settings.port == DEFAULT_PORT
    assert settings.profile is Profile.LOCAL
    assert settings.public_url is None
    assert settings.admin_token is None
    assert settings.secret_key is None


def test_secrets_from_the_environment_do_not_appear_in_repr(tmp_path: Path) -> None:
    settings = Settings.load(data_dir=tmp_path, environ=ENVIRON)
    assert "admin-token-from-env-0123" not in repr(settings)
    assert "key-from-env" not in repr(settings)


@pytest.mark.parametrize("port", [0, 1, 65535])
def test_a_port_from_0_to_65535_is_accepted(tmp_path: Path, port: int) -> None:
    assert Settings.load(data_dir=tmp_path, port=port, environ={}).port == port


@pytest.mark.parametrize("port", [-1, 65536, 100000])
def test_an_explicit_port_out_of_range_is_refused(tmp_path: Path, port: int) -> None:
    refused("port", lambda: Settings.load(data_dir=tmp_path, port=port, environ={}))


@pytest.mark.parametrize("raw", ["70000", "-5", "abc", "80.5", "0x50", "8_0", "\uff18\uff10"])
def test_a_port_from_the_environment_that_is_not_a_valid_port_is_refused(tmp_path: Path, raw: str) -> None:
    refused("port", lambda: Settings.load(data_dir=tmp_path, environ={"MCP_CENTER_PORT": raw}))


@pytest.mark.parametrize("profile", ["production", "local"])
def test_a_known_profile_is_accepted(tmp_path: Path, profile: str) -> None:
    assert Settings.load(data_dir=tmp_path, profile=profile, environ={}).profile == Profile(profile)


@pytest.mark.parametrize("profile", ["prod", "LOCAL", "staging"])
def test_an_unknown_profile_is_refused(tmp_path: Path, profile: str) -> None:
    refused("profile", lambda: Settings.load(data_dir=tmp_path, profile=profile, environ={}))


def test_an_unknown_profile_from_the_environment_is_refused(tmp_path: Path) -> None:
    refused("profile", lambda: Settings.load(data_dir=tmp_path, environ={"MCP_CENTER_PROFILE": "staging"}))


@pytest.mark.parametrize(
    "url",
    [
        pytest.param("ftp://center.example.com", id="scheme"),
        pytest.param("center.example.com", id="no-scheme"),
        pytest.param("https://", id="no-host"),
        pytest.param("https://user:pw@center.example.com", id="credentials"),
        pytest.param("https://:pw@center.example.com", id="password-only"),
        pytest.param("https://tok@center.example.com", id="user-only"),
        pytest.param("https://center.example.com/#top", id="fragment"),
        pytest.param("https://center.example.com/?next=/", id="query"),
        pytest.param("https://center.example.com:99999", id="port-out-of-range"),
        pytest.param("http://[::1", id="broken-ipv6"),
        pytest.param("https://center.example.com/a b", id="space"),
        pytest.param("https://center.example.com/\n", id="newline"),
    ],
)
def test_a_public_url_that_is_not_a_plain_http_base_url_is_refused(tmp_path: Path, url: str) -> None:
    refused("public_url", lambda: Settings.load(data_dir=tmp_path, public_url=url, environ={}))


def test_a_bad_public_url_from_the_environment_is_refused(tmp_path: Path) -> None:
    refused(
        "public_url",
        lambda: Settings.load(data_dir=tmp_path, environ={"MCP_CENTER_PUBLIC_URL": "https://u:p@center.example.com"}),
    )


@pytest.mark.parametrize(
    ("url", "stored"),
    [
        ("https://center.example.com/", "https://center.example.com"),
        ("https://center.example.com/mcp-center/", "https://center.example.com/mcp-center"),
        ("http://127.0.0.1:9000", "http://127.0.0.1:9000"),
        ("https://[2001:db8::1]:8443", "https://[2001:db8::1]:8443"),
    ],
)
def test_a_public_url_is_stored_without_trailing_slash_and_becomes_the_base_url(
    tmp_path: Path, url: str, stored: str
) -> None:
    settings = Settings.load(data_dir=tmp_path, host="0.0.0.0", public_url=url, environ={})
    assert settings.public_url == stored
    assert settings.base_url == stored


@pytest.mark.parametrize(
    ("host", "port", "base_url"),
    [
        ("127.0.0.1", 8765, "http://127.0.0.1:8765"),
        ("0.0.0.0", 9000, "http://127.0.0.1:9000"),
        ("::", 9000, "http://127.0.0.1:9000"),
        ("::1", 8765, "http://[::1]:8765"),
        ("[::1]", 8765, "http://[::1]:8765"),
        ("fe80::1", 80, "http://[fe80::1]:80"),
        ("192.168.1.10", 8080, "http://192.168.1.10:8080"),
        ("center.lan", 8765, "http://center.lan:8765"),
    ],
)
def test_base_url_is_derived_from_the_bind_host_and_port(tmp_path: Path, host: str, port: int, base_url: str) -> None:
    assert Settings.load(data_dir=tmp_path, host=host, port=port, environ={}).base_url == base_url


def test_allowed_hosts_come_from_a_comma_list_in_the_environment(tmp_path: Path) -> None:
    environ = {"MCP_CENTER_ALLOWED_HOSTS": " A.example.com, ,b.example.com:8765 ,"}
    settings = Settings.load(data_dir=tmp_path, environ=environ)
    assert settings.allowed_hosts == ("a.example.com", "b.example.com:8765")


def test_explicit_allowed_hosts_are_normalized_and_come_before_the_environment_ones(tmp_path: Path) -> None:
    settings = Settings.load(
        data_dir=tmp_path,
        allowed_hosts=(" Flag.Example.com ", ""),
        environ={"MCP_CENTER_ALLOWED_HOSTS": "env.example.com"},
    )
    assert settings.allowed_hosts == ("flag.example.com", "env.example.com")


def test_approval_and_elicitation_timeouts_come_from_the_environment(tmp_path: Path) -> None:
    default = Settings.load(data_dir=tmp_path, environ={})
    assert (default.approval_timeout_s, default.elicitation_timeout_s) == (600.0, 600.0)
    environ = {"MCP_CENTER_APPROVAL_TIMEOUT_S": "30", "MCP_CENTER_ELICITATION_TIMEOUT_S": "120.5"}
    settings = Settings.load(data_dir=tmp_path, environ=environ)
    assert (settings.approval_timeout_s, settings.elicitation_timeout_s) == (30.0, 120.5)


@pytest.mark.parametrize("raw", ["0", "-5", "soon", "nan", "inf", "90000"])
def test_a_timeout_that_is_not_a_sane_number_of_seconds_is_refused(tmp_path: Path, raw: str) -> None:
    refused(
        "approval_timeout_s", lambda: Settings.load(data_dir=tmp_path, environ={"MCP_CENTER_APPROVAL_TIMEOUT_S": raw})
    )
    refused(
        "elicitation_timeout_s",
        lambda: Settings.load(data_dir=tmp_path, environ={"MCP_CENTER_ELICITATION_TIMEOUT_S": raw}),
    )


def test_the_stop_grace_comes_from_the_environment_within_its_bounds(tmp_path: Path) -> None:
    """R-2.6, R-9.3: 2 s by default; a tuning knob from 0.05 s to 60 s."""
    assert Settings.load(data_dir=tmp_path, environ={}).stop_grace_s == 2.0
    for raw, seconds in (("0.05", 0.05), ("0.2", 0.2), ("60", 60.0)):
        assert Settings.load(data_dir=tmp_path, environ={"MCP_CENTER_STOP_GRACE_S": raw}).stop_grace_s == seconds


@pytest.mark.parametrize("raw", ["0", "0.01", "-1", "soon", "nan", "inf", "61"])
def test_a_stop_grace_out_of_its_bounds_is_refused(tmp_path: Path, raw: str) -> None:
    refused("stop_grace_s", lambda: Settings.load(data_dir=tmp_path, environ={"MCP_CENTER_STOP_GRACE_S": raw}))


def test_the_request_timeout_comes_from_the_environment_within_its_bounds(tmp_path: Path) -> None:
    """R-7.2 (sec37): 30 s by default; from 0.1 s to an hour."""
    assert Settings.load(data_dir=tmp_path, environ={}).request_timeout_s == 30.0
    for raw, seconds in (("0.1", 0.1), ("5", 5.0), ("3600", 3600.0), (" 2.5 ", 2.5), (".5", 0.5), ("1e2", 100.0)):
        loaded = Settings.load(data_dir=tmp_path, environ={"MCP_CENTER_REQUEST_TIMEOUT_S": raw})
        assert loaded.request_timeout_s == seconds


@pytest.mark.parametrize("raw", ["0", "0.05", "-1", "soon", "nan", "inf", "3601", "1_0", "\uff15", "30s", "0x10"])
def test_a_request_timeout_out_of_its_bounds_is_refused(tmp_path: Path, raw: str) -> None:
    refused(
        "request_timeout_s", lambda: Settings.load(data_dir=tmp_path, environ={"MCP_CENTER_REQUEST_TIMEOUT_S": raw})
    )


def test_serve_reads_its_static_gateway_token_from_its_own_variable_not_the_clients(tmp_path: Path) -> None:
    """R-7.1, R-8: the clients' MCP_CENTER_GATEWAY_TOKEN in serve's shell is not a token serve accepts."""
    client_side = {"MCP_CENTER_GATEWAY_TOKEN": "mcpg_copied-from-a-client-shell-0123"}
    assert Settings.load(data_dir=tmp_path, environ=client_side).gateway_token is None
    own = {"MCP_CENTER_SERVE_GATEWAY_TOKEN": "bench-gateway-token-0123456789"}
    assert Settings.load(data_dir=tmp_path, environ=own).gateway_token == "bench-gateway-token-0123456789"


@pytest.mark.parametrize("raw", ["short", "x" * 15, "sixteen chars with spaces", "token-with-ünïcode-0123"])
def test_a_weak_or_odd_static_gateway_token_is_refused_at_start(tmp_path: Path, raw: str) -> None:
    error = refused(
        "gateway_token", lambda: Settings.load(data_dir=tmp_path, environ={"MCP_CENTER_SERVE_GATEWAY_TOKEN": raw})
    )
    assert raw not in error.message


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://mcp:pw@db:5432/center", "postgresql://mcp:***@db:5432/center"),
        ("postgresql://u:Hunter2?xyz@h/db", "postgresql://u:***@h/db"),  # libpq reads the password to the last @
        ("postgresql://u:Hunter2#xyz@h/db", "postgresql://u:***@h/db"),
        ("postgresql://u:pa/ss@h/db", "postgresql://u:***@h/db"),
        ("postgresql://u?password=s@h/db", "postgresql://***@h/db"),
        ("postgresql://u:p@h/db?sslmode=require&password=x", "postgresql://u:***@h/db"),
        ("postgresql://h/db?password=x", "postgresql://h/db"),
        ("postgresql://u@h/db", "postgresql://u@h/db"),
    ],
)
def test_the_database_is_shown_without_any_part_of_its_password(url: str, shown: str) -> None:
    """R-10.1: messages, serve.json and database.json show the database; a password holding `?`, `#`
    or `/` was partly shown (a generic URL parser ends the authority there, libpq does not)."""
    assert database_display(url) == shown
