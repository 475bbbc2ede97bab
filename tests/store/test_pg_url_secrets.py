"""No part of the database URL's password reaches an error, a log line or the terminal (R-1.5, R-10.1;
store40, from break40: `invalid percent-encoded token: "Sekr3t%zzpw"` was printed as it was).

Malformed URLs (which libpq quotes back) and well-formed ones with a password in the user info or in
a query parameter; the socket directories hold no server, except where the cluster's is named.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from mcp_center.errors import StorageError
from mcp_center.store import PgStore
from mcp_center.store.pg_url import UNPARSABLE_URL, scrub, url_secrets
from tests.support.cli import run_cli_process
from tests.support.postgres import PgCluster
from tests.support.serve import serve_env

SECRET = "Sekr3tpw"
"""In every URL below, alone or inside the password; none of it may be shown."""


def _urls(socket_dir: str) -> list[str]:
    return [
        f"postgresql://app:{SECRET}%zz@/mcp_center?host={socket_dir}",  # a bad %XX in the user info
        f"postgresql://app@/mcp_center?host={socket_dir}&password={SECRET}%zz",  # ... in ?password=
        f"postgresql://app:{SECRET}%20x y@/db?host={socket_dir}",  # a space
        f"postgresql://app:{SECRET}@[::1/db",  # libpq quotes the whole URL here
        f"postgresql://app:{SECRET}@/db?host={socket_dir}&bogus=1",  # an unknown parameter
        f"postgresql://app@/db?host={socket_dir}&password={SECRET}&sslmode={SECRET}",  # a bad value
        f"postgresql://app@/db?host={socket_dir}&sslpassword={SECRET}&connect_timeout=x{SECRET}",
        f"postgresql://app:{SECRET}@/db?host={socket_dir}",  # well formed, nobody listening
        f"postgresql://app@/db?host={socket_dir}&passfile=/nonexistent/{SECRET}",
    ]


def _shown(error: StorageError, caplog: pytest.LogCaptureFixture) -> str:
    """Everything a user or an operator could see of the failure: message, details, log lines."""
    lines = [f"{r.getMessage()} {r.__dict__}" for r in caplog.records]
    return "\n".join([error.message, str(error.details), *lines])


@pytest.mark.parametrize("index", range(9))
def test_no_part_of_the_password_is_in_any_error_or_log_line(
    index: int, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    url = _urls(str(tmp_path))[index]
    store = PgStore(url, display="postgresql://app:***@/db", connect_timeout_s=2.0)
    with caplog.at_level(logging.DEBUG), pytest.raises(StorageError) as refused:
        store.open()
    shown = _shown(refused.value, caplog)
    for part in (SECRET, SECRET[:5], SECRET[3:]):
        assert part not in shown, (url, shown)


def test_a_url_libpq_cannot_parse_gets_our_sentence_not_libpq_s(tmp_path: Path) -> None:
    store = PgStore(f"postgresql://app:{SECRET}%zz@/db?host={tmp_path}", display="db")
    with pytest.raises(StorageError) as refused:
        store.open()
    assert refused.value.details["fault"] == UNPARSABLE_URL
    assert refused.value.message.startswith("cannot connect to the database db: the database URL cannot be parsed")


def test_the_secrets_of_a_url_are_its_passwords_as_written_and_decoded() -> None:
    url = "postgresql://app:p%40ss%zz@h/db?password=q%2Bw&sslpassword=k+y&PassFile=/f&user=app&host=h"
    found = url_secrets(url)
    for expected in ("p%40ss%zz", "p@ss%zz", "q%2Bw", "q+w", "k+y", "k y", "/f"):
        assert expected in found, found
    assert "app" not in found and "h" not in found
    assert url_secrets("postgresql://h/db") == ()
    assert url_secrets("not a url at all@") == ()
    assert scrub("a p@ss%zz b q+w", found) == "a *** b ***"


def test_a_wrong_password_on_a_live_database_is_refused_without_it(pg_cluster: PgCluster) -> None:
    """A reachable server: whatever it answers about the connection, the password is not in it."""
    url = (
        pg_cluster.url()
        .replace("postgresql://mcp@", f"postgresql://mcp:{SECRET}@")
        .replace("?host=", f"?sslmode={SECRET}&host=")
    )
    store = PgStore(url, display="db")
    with pytest.raises(StorageError) as refused:
        store.open()
    assert SECRET not in refused.value.message + str(refused.value.details)


def test_the_cli_prints_no_part_of_a_malformed_url_s_password(tmp_path: Path) -> None:
    """break40's repro: `MCP_CENTER_DATABASE_URL='postgresql://app:Sekr3t%zzpw@/...' mcp-center list`."""
    for url in _urls(str(tmp_path))[:3]:
        env = {**serve_env(), "MCP_CENTER_DATABASE_URL": url}
        done = run_cli_process("list", "--data-dir", str(tmp_path / "data"), env=env)
        assert done.returncode != 0, done.stdout
        assert done.stderr.startswith(("error [STORAGE_ERROR]", "error [SETTING_INVALID]")), done.stderr
        assert SECRET[:5] not in done.stderr + done.stdout, done.stderr
