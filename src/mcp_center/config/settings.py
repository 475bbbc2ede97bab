"""Host settings from command-line flags and environment variables, validated once at start-up.

Precedence: an explicit argument (CLI flag) wins over the environment, which wins over the
default. Nothing here touches the network or the data directory's contents.

| setting | flag | environment | default |
|---|---|---|---|
| data directory | `--data-dir` | `MCP_CENTER_DATA_DIR` | the platform's user data dir (`platformdirs`) |
| bind host | `--host` | `MCP_CENTER_HOST` | `127.0.0.1` (R-7.2) |
| port | `--port` | `MCP_CENTER_PORT` | `8765` |
| profile | `--profile` | `MCP_CENTER_PROFILE` | `local` (R-2.5) |
| public base URL | `--public-url` | `MCP_CENTER_PUBLIC_URL` | `http://<host>:<port>` |
| extra allowed Host headers | `--allowed-host` | `MCP_CENTER_ALLOWED_HOSTS` (comma list) | none |
| admin token | | `MCP_CENTER_ADMIN_TOKEN` | generated on first start (R-7.1) |
| secret key | | `MCP_CENTER_SECRET_KEY` | key file in the data dir (R-1.5) |
| static gateway token (16+ chars) | | `MCP_CENTER_SERVE_GATEWAY_TOKEN` | none (tokens come from the API/CLI/page) |
| approval timeout (s) | | `MCP_CENTER_APPROVAL_TIMEOUT_S` | `600` (R-5.3) |
| elicitation card timeout (s) | | `MCP_CENTER_ELICITATION_TIMEOUT_S` | `600` (R-6.1) |
| stdio stop grace (s), 0.05-60 | | `MCP_CENTER_STOP_GRACE_S` | `2` (R-2.6, R-9.3) |
| request read timeout (s), 0.1-3600 | | `MCP_CENTER_REQUEST_TIMEOUT_S` | `30` (R-7.2) |
| shared database (R-10.1) | `--database-url` | `MCP_CENTER_DATABASE_URL` | none: the JSON files in the data dir |
| instance name (R-10.2) | `--instance-name` | `MCP_CENTER_INSTANCE_NAME` | `<host name>:<port>` |

With a database URL (`postgresql://user:password@host:port/db`), servers, ciphertexts, OAuth
credentials, gateway tokens, approvals and cards live in PostgreSQL and several `serve` instances
share them; the data directory still holds what is per instance (the key file unless
`MCP_CENTER_SECRET_KEY` is set, the admin token, `serve.json`, the process-group record). The URL
may carry a password: it is never shown (`database_display`).
"""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from urllib.parse import urlsplit

import platformdirs

from mcp_center.errors import FieldError, SettingInvalid

__all__ = ["DATABASE_URL_FORM", "DEFAULT_PORT", "Profile", "Settings", "is_database_url"]

DEFAULT_PORT = 8765
DEFAULT_APPROVAL_TIMEOUT_S = 600.0
"""Seconds an agent's call waits for the user's approval (R-5.3)."""
DEFAULT_ELICITATION_TIMEOUT_S = 600.0
"""Seconds an elicitation card waits for the user's answer (R-6.1); below the 15 min HTTP read timeout."""
DEFAULT_STOP_GRACE_S = 2.0
"""Seconds a stdio server gets at each step of its stop: after its stdin closed, and between SIGTERM
and SIGKILL to its process group (R-2.6); also the watchdog's and the take-over's SIGTERM-to-SIGKILL
wait (R-9.3)."""
MIN_STOP_GRACE_S = 0.05
MAX_STOP_GRACE_S = 60.0
MAX_WAIT_S = 86_400.0
DEFAULT_REQUEST_TIMEOUT_S = 30.0
"""Seconds a request's head may take to arrive, and each read of its body to follow the last (R-7.2)."""
REQUEST_TIMEOUT_BOUNDS_S = (0.1, 3600.0)


class Profile(StrEnum):
    """Deployment profile (R-2.5): `local` allows stdio servers, `production` refuses to start them."""

    LOCAL = "local"
    PRODUCTION = "production"


@dataclass(frozen=True)
class Settings:
    """Validated host settings. Build with `Settings.load(...)`."""

    data_dir: Path
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    profile: Profile = Profile.LOCAL
    public_url: str | None = None
    allowed_hosts: tuple[str, ...] = ()
    admin_token: str | None = field(default=None, repr=False)
    """From `MCP_CENTER_ADMIN_TOKEN`; None means the token file in the data dir."""
    secret_key: str | None = field(default=None, repr=False)
    """From `MCP_CENTER_SECRET_KEY` (urlsafe base64 of 32 bytes); None means the key file."""
    gateway_token: str | None = field(default=None, repr=False)
    """From `MCP_CENTER_SERVE_GATEWAY_TOKEN`: one more token accepted at `/mcp` (automation, benchmarks).

    Deliberately not `MCP_CENTER_GATEWAY_TOKEN`, the variable *clients* (the stdio bridge, Cursor)
    read: a `serve` started from a shell that exported a client's token must not accept that
    token for as long as it runs, whatever happens to the stored token it copies (R-7.1, R-8)."""
    approval_timeout_s: float = DEFAULT_APPROVAL_TIMEOUT_S
    """Seconds a pending approval waits for a decision (R-5.3)."""
    elicitation_timeout_s: float = DEFAULT_ELICITATION_TIMEOUT_S
    """Seconds an elicitation card waits for an answer (R-6.1)."""
    stop_grace_s: float = DEFAULT_STOP_GRACE_S
    """From `MCP_CENTER_STOP_GRACE_S`: seconds a stdio server gets to exit after its stdin closed, and
    again after SIGTERM before SIGKILL (R-2.6); the watchdog and the take-over of a crashed serve's
    groups wait as long between SIGTERM and SIGKILL (R-9.3). A tuning knob: raise it for servers
    that need longer to flush on exit; the test suite lowers it where a server ignores both."""
    request_timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S
    """From `MCP_CENTER_REQUEST_TIMEOUT_S`: seconds `serve` gives an HTTP request's head to arrive
    whole, and each read of its body to follow the one before; then it answers 408 and closes the
    connection, so that connections sending slowly or not at all (slowloris) hold nothing (R-7.2)."""
    database_url: str | None = field(default=None, repr=False)
    """`postgresql://...` (R-10.1): the shared state lives there; None: the JSON files in `mcp_dir`.
    May hold a password: show `database_display` instead."""
    instance_name: str | None = None
    """How this instance is named on pages and in the `X-MCP-Center-Instance` header (R-10.2);
    None: `<host name>:<port>`."""

    @classmethod
    def load(
        cls,
        *,
        data_dir: str | os.PathLike[str] | None = None,
        host: str | None = None,
        port: int | None = None,
        profile: str | None = None,
        public_url: str | None = None,
        allowed_hosts: tuple[str, ...] = (),
        database_url: str | None = None,
        instance_name: str | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> Settings:
        """Merge explicit values over the environment over defaults, and validate.

        Raises:
            SettingInvalid: a value is malformed (a data directory that is a file, port out of
                range, unknown profile, bad URL, a database URL that is not `postgresql://`, an
                instance name that is not 1-64 of `[A-Za-z0-9._:-]`).
        """
        env = os.environ if environ is None else environ
        raw_dir = data_dir if data_dir is not None else env.get("MCP_CENTER_DATA_DIR")
        resolved_dir = Path(raw_dir).expanduser() if raw_dir else Path(platformdirs.user_data_dir("mcp-center"))
        if resolved_dir.exists() and not resolved_dir.is_dir():
            # Every command would fail later in a mkdir or an open with a traceback.
            raise _invalid("data_dir", f"{resolved_dir} is not a directory (MCP_CENTER_DATA_DIR, --data-dir)")
        host_value = host or env.get("MCP_CENTER_HOST") or "127.0.0.1"
        port_value: int
        if port is not None:
            port_value = port
        else:
            raw_port = env.get("MCP_CENTER_PORT")
            if raw_port and not re.fullmatch(
                r"[0-9]+", raw_port.strip(), re.ASCII
            ):  # int() takes '8_0' and full-width digits
                raise _invalid("port", "MCP_CENTER_PORT must be an integer")
            port_value = int(raw_port) if raw_port else DEFAULT_PORT
        if not 0 <= port_value <= 65535:
            raise _invalid("port", "MCP_CENTER_PORT (or --port) must be between 0 and 65535")
        raw_profile = profile or env.get("MCP_CENTER_PROFILE") or Profile.LOCAL.value
        try:
            profile_value = Profile(raw_profile)
        except ValueError:
            raise _invalid("profile", "MCP_CENTER_PROFILE (or --profile) must be 'local' or 'production'") from None
        public = public_url or env.get("MCP_CENTER_PUBLIC_URL") or None
        if public is not None:
            if not _is_base_url(public):
                raise _invalid(
                    "public_url",
                    "MCP_CENTER_PUBLIC_URL (or --public-url) must be an http(s) URL with a host and no "
                    "credentials, query, fragment or spaces",
                )
            public = public.rstrip("/")
        extra_hosts = tuple(h.strip().lower() for h in allowed_hosts if h.strip())
        env_hosts = env.get("MCP_CENTER_ALLOWED_HOSTS", "")
        extra_hosts += tuple(h.strip().lower() for h in env_hosts.split(",") if h.strip())
        approval_timeout = _seconds(
            env, "MCP_CENTER_APPROVAL_TIMEOUT_S", "approval_timeout_s", DEFAULT_APPROVAL_TIMEOUT_S
        )
        elicitation_timeout = _seconds(
            env, "MCP_CENTER_ELICITATION_TIMEOUT_S", "elicitation_timeout_s", DEFAULT_ELICITATION_TIMEOUT_S
        )
        stop_grace = _seconds(
            env,
            "MCP_CENTER_STOP_GRACE_S",
            "stop_grace_s",
            DEFAULT_STOP_GRACE_S,
            bounds=(MIN_STOP_GRACE_S, MAX_STOP_GRACE_S),
        )
        request_timeout = _seconds(
            env,
            "MCP_CENTER_REQUEST_TIMEOUT_S",
            "request_timeout_s",
            DEFAULT_REQUEST_TIMEOUT_S,
            bounds=REQUEST_TIMEOUT_BOUNDS_S,
        )
        database = _database_url(database_url or env.get("MCP_CENTER_DATABASE_URL") or None)
        name = instance_name or env.get("MCP_CENTER_INSTANCE_NAME") or None
        if name is not None and not _INSTANCE_NAME.fullmatch(name):
            raise _invalid(
                "instance_name",
                "MCP_CENTER_INSTANCE_NAME (or --instance-name) must be 1-64 characters of letters, digits, "
                "'.', '_', ':' and '-'",
            )
        return cls(
            data_dir=resolved_dir.resolve(),
            host=host_value,
            port=port_value,
            profile=profile_value,
            public_url=public,
            allowed_hosts=extra_hosts,
            admin_token=env.get("MCP_CENTER_ADMIN_TOKEN") or None,
            secret_key=env.get("MCP_CENTER_SECRET_KEY") or None,
            gateway_token=_static_gateway_token(env),
            approval_timeout_s=approval_timeout,
            elicitation_timeout_s=elicitation_timeout,
            stop_grace_s=stop_grace,
            request_timeout_s=request_timeout,
            database_url=database,
            instance_name=name,
        )

    @property
    def base_url(self) -> str:
        """The URL users and OAuth redirects reach us at (no trailing slash)."""
        if self.public_url:
            return self.public_url
        bare = self.host.strip("[]")  # accept "::1" and "[::1]" alike
        if bare in {"0.0.0.0", "::", ""}:  # noqa: S104 - comparing, not binding
            return f"http://127.0.0.1:{self.port}"
        host = f"[{bare}]" if ":" in bare else bare
        return f"http://{host}:{self.port}"

    @property
    def listen_url(self) -> str:
        """Where this process listens, `http://<host>:<port>` as bound (`0.0.0.0` stays `0.0.0.0`),
        whatever `public_url` says: what the `serve` banner and the Instances table show (R-10.2)."""
        bare = self.host.strip("[]")
        return f"http://[{bare}]:{self.port}" if ":" in bare else f"http://{bare}:{self.port}"

    @property
    def database_display(self) -> str | None:
        """The database URL without its password (for messages, logs and pages), or None."""
        return database_display(self.database_url) if self.database_url else None

    @property
    def instance_label(self) -> str:
        """This instance's name (R-10.2): `instance_name`, else `<host name>:<port>`."""
        return self.instance_name or f"{socket.gethostname()}:{self.port}"

    @property
    def mcp_dir(self) -> Path:
        """`<data dir>/mcp`, where servers.json and the ciphertexts live (R-1.2)."""
        return self.data_dir / "mcp"


MIN_STATIC_GATEWAY_TOKEN_CHARS = 16
_INSTANCE_NAME = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")
_DATABASE_SCHEMES = ("postgresql", "postgres")


def database_display(url: str) -> str:
    """`url` with any password replaced by `***` (query parameters dropped: they may hold one too).

    The user info ends at the last `@`, as libpq reads it: a password may hold `?`, `#` or `/`, where
    a generic URL parser would end the authority early and show part of it. A user name that holds
    one of those is shown as `***` too."""
    scheme, separator, rest = url.partition("://")
    if not separator:
        return "postgresql://(unparsable)"
    userinfo, at, location = rest.rpartition("@")
    try:
        parts = urlsplit(f"{scheme}://{location if at else rest}")
    except ValueError:
        return f"{scheme}://(unparsable)"
    shown = f"{parts.netloc}{parts.path}"
    if not at:
        return f"{scheme}://{shown}"
    user = userinfo.split(":", 1)[0]
    user = "***" if not user or any(c in user for c in "/?#&=") else user
    return f"{scheme}://{user}:***@{shown}" if ":" in userinfo else f"{scheme}://{user}@{shown}"


DATABASE_URL_FORM = "a postgresql://user:password@host:port/database URL"
"""What a database URL must be, for messages (R-10.1)."""


def is_database_url(url: str) -> bool:
    """Whether `url` has the shape of a database URL: a `postgresql://` (or `postgres://`) URL
    without spaces; the driver checks the rest when it connects (R-10.1)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    return parts.scheme in _DATABASE_SCHEMES and not any(c.isspace() for c in url)


def _database_url(url: str | None) -> str | None:
    """Check the shape of a database URL (`is_database_url`)."""
    if url is None:
        return None
    if not is_database_url(url):
        raise _invalid("database_url", f"MCP_CENTER_DATABASE_URL (or --database-url) must be {DATABASE_URL_FORM}")
    return url


def _static_gateway_token(env: Mapping[str, str]) -> str | None:
    """`MCP_CENTER_SERVE_GATEWAY_TOKEN`, or None; refused when shorter than 16 characters or not printable ASCII."""
    token = env.get("MCP_CENTER_SERVE_GATEWAY_TOKEN") or None
    if token is None:
        return None
    if len(token) < MIN_STATIC_GATEWAY_TOKEN_CHARS or not (token.isascii() and token.isprintable()) or " " in token:
        raise _invalid(
            "gateway_token",
            f"MCP_CENTER_SERVE_GATEWAY_TOKEN must be at least {MIN_STATIC_GATEWAY_TOKEN_CHARS} printable ASCII "
            "characters without spaces",
        )
    return token


def _is_base_url(url: str) -> bool:
    """True for `http(s)://host[:port][/path]`: where users, and OAuth redirects, can reach us."""
    if any(c.isspace() or not c.isprintable() for c in url):
        return False
    try:
        parts = urlsplit(url)
        _ = parts.port  # raises ValueError for a port out of range
    except ValueError:
        return False
    return (
        parts.scheme in {"http", "https"}
        and bool(parts.hostname)
        and "@" not in parts.netloc
        and not parts.query
        and "?" not in url
        and "#" not in url
    )


_DECIMAL = re.compile(r"[+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)
"""What a number of seconds in the environment may look like: `30`, `2.5`, `.5`, `1e2`."""


def _seconds(
    env: Mapping[str, str], name: str, field_name: str, default: float, *, bounds: tuple[float, float] = (1, MAX_WAIT_S)
) -> float:
    """`env[name]` as seconds within `bounds` (inclusive), or `default` when unset or empty.

    Raises:
        SettingInvalid: not a number, or out of `bounds` (`SETTING_INVALID` on `field_name`).
    """
    low, high = bounds
    raw = env.get(name)
    if not raw:
        return default
    # Plain ASCII decimals only: float() also takes '1_0' (10) and full-width digits.
    if not _DECIMAL.fullmatch(raw.strip()):
        raise _invalid(field_name, f"{name} must be a number of seconds, e.g. 30 or 2.5")
    value = float(raw)
    if not low <= value <= high:  # also refuses nan
        raise _invalid(field_name, f"{name} must be between {low:g} and {high:g} seconds")
    return value


def _invalid(field_name: str, message: str) -> SettingInvalid:
    """The refusal of setting `field_name`: `message` names its variable and never holds its value."""
    error = FieldError(field_name, "SETTING_INVALID", message)
    return SettingInvalid(f"{field_name}: {message}", details={"errors": [error.to_dict()]})
