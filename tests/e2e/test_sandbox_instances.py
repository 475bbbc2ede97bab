"""Sandbox homes with two real `mcp-center serve` instances on one PostgreSQL database (R-11.1, R-10.2).

Each instance keeps a sandboxed server's home in its own data directory. A server deleted on
instance "a" loses its home on "b" too (b learns of the deletion through the store's change
notifications), also when b was down at the time (b removes it at its start); a new server added
under the same id never reads the old one's files on either instance. A warm-up answered by one
instance fills the home on every instance (the others follow the record's stamp), and on one that
starts later. No balancer: each instance's API is asked directly, so which instance runs what is known.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx2
import pytest

from tests.e2e.cluster import Instance, cluster_env, start_instance, wait_serving
from tests.support.loopback import NO_TLS
from tests.support.postgres import PgCluster
from tests.support.processes import stop_process
from tests.support.sandbox import escape_command, require_sandbox
from tests.support.serve import ADMIN_TOKEN
from tests.support.waiting import eventually_sync

pytestmark = [pytest.mark.e2e]

SERVERS = "/api/mcp/servers"
SERVER_ID = "boxed"


@pytest.fixture(autouse=True)
def _sandbox_available() -> None:
    require_sandbox()


def api(instance: Instance) -> httpx2.Client:
    """An admin API client of one instance."""
    return httpx2.Client(
        verify=NO_TLS,
        base_url=instance.url,
        headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
        timeout=60,
        trust_env=False,
    )


def add_ready(client: httpx2.Client) -> None:
    """Add the escape server as `boxed` (sandboxed), trust, test and enable it."""
    argv, paths = escape_command()
    body = {
        "id": SERVER_ID,
        "name": "Boxed",
        "transport": "stdio",
        "command": argv[0],
        "args": argv[1:],
        "sandbox": {"paths": [p.model_dump() for p in paths]},
    }
    created = client.post(SERVERS, json=body)
    assert created.status_code == 201, created.text
    view = created.json()
    assert view["id"] == SERVER_ID
    assert client.post(f"{SERVERS}/{SERVER_ID}/trust", json={"digest": view["digest"]}).status_code == 200
    tested = client.post(f"{SERVERS}/{SERVER_ID}/test").json()
    assert tested["ok"], tested
    assert client.post(f"{SERVERS}/{SERVER_ID}/enable").status_code == 200


def call(client: httpx2.Client, tool: str, **arguments: Any) -> tuple[bool, str] | None:
    """(ok, text) of a tool call on this instance; None while it does not run the server yet."""
    answer = client.post(f"{SERVERS}/{SERVER_ID}/tools/{tool}/call", json={"arguments": arguments})
    if answer.status_code != 200:
        return None
    result = answer.json()
    return not result.get("isError", False), result["content"][0]["text"]


def files_in_homes(instance: Instance, name: str) -> list[Path]:
    """Every file `name` in a home of `boxed` in this instance's data directory."""
    return list((instance.data_dir / "sandbox" / SERVER_ID).glob(f"*/**/{name}"))


@pytest.fixture
def instances(pg_cluster: PgCluster, tmp_path: Path) -> Iterator[dict[str, Any]]:
    """Instances "a" and "b" on a fresh database (one key), each with its own data directory, and
    what starting another needs (`env`, `url`, `root`; `stack` stops it at the end)."""
    database_url = pg_cluster.database()
    env = cluster_env()
    with ExitStack() as stack:
        stack.callback(pg_cluster.drop, database_url)
        started = {name: start_instance(name, tmp_path, env, database_url) for name in ("a", "b")}
        for instance in started.values():
            stack.callback(stop_process, instance.proc)
            wait_serving(instance)
        yield {"a": started["a"], "b": started["b"], "env": env, "url": database_url, "root": tmp_path, "stack": stack}


def write_on(instance: Instance, text: str) -> None:
    """Write /home/mcp/creds.txt in b's sandbox of `boxed`, once b runs the server."""
    with api(instance) as client:
        assert eventually_sync(
            lambda: call(client, "write_file", path="/home/mcp/creds.txt", text=text), timeout_s=30
        ) == (
            True,
            "written",
        )
    assert [path.read_text() for path in files_in_homes(instance, "creds.txt")] == [text]


def read_on(instance: Instance) -> tuple[bool, str]:
    """(ok, text) of reading /home/mcp/creds.txt in `boxed`'s sandbox on `instance`."""
    with api(instance) as client:
        answer = eventually_sync(lambda: call(client, "read_file", path="/home/mcp/creds.txt"), timeout_s=30)
    assert answer is not None
    return answer


def test_a_deletion_on_one_instance_removes_the_home_on_the_other(instances: dict[str, Any]) -> None:
    a: Instance = instances["a"]
    b: Instance = instances["b"]
    with api(a) as client_a:
        add_ready(client_a)
        write_on(b, "old-secret")
        assert client_a.delete(f"{SERVERS}/{SERVER_ID}").status_code == 204
        eventually_sync(lambda: not (b.data_dir / "sandbox" / SERVER_ID).exists(), timeout_s=10)
        add_ready(client_a)
    ok, text = read_on(b)
    assert not ok and text.startswith("ENOENT"), text


def test_an_instance_down_during_a_deletion_removes_the_home_at_its_start(instances: dict[str, Any]) -> None:
    a: Instance = instances["a"]
    b: Instance = instances["b"]
    with api(a) as client_a:
        add_ready(client_a)
        write_on(b, "old-secret")
        stop_process(b.proc)
        assert client_a.delete(f"{SERVERS}/{SERVER_ID}").status_code == 204
        add_ready(client_a)
    assert [path.read_text() for path in files_in_homes(b, "creds.txt")] == ["old-secret"]
    again = start_instance("b", instances["root"], instances["env"], instances["url"])
    instances["stack"].callback(lambda: stop_process(again.proc))
    wait_serving(again)
    assert not files_in_homes(again, "creds.txt")
    ok, text = read_on(again)
    assert not ok and text.startswith("ENOENT"), text


FAKE_NPX = """#!/bin/sh
# npx's stand-in: its warm-up form (--yes --package=PKG -- true) notes PKG in the sandbox's home
for arg in "$@"; do
  case "$arg" in --package=*) echo "${arg#--package=}" >> "$HOME/warmed-packages" ;; esac
done
"""


def warmed_packages(instance: Instance, server_id: str) -> list[str]:
    """The packages noted in `server_id`'s homes on `instance` (one line per warm-up run there)."""
    found = list((instance.data_dir / "sandbox" / server_id).glob("*/home/warmed-packages"))
    return [line for path in found for line in path.read_text().splitlines()]


def test_a_warm_up_on_one_instance_warms_every_instance_s_home(instances: dict[str, Any], tmp_path: Path) -> None:
    """R-11.1, R-10.2 (inst36): the warm-up answered by "a" says so and names "b"; b warms its own home
    in the background, a instance started afterwards ("c") at its start, and a not a second time."""
    a: Instance = instances["a"]
    b: Instance = instances["b"]
    bin_dir = tmp_path / "fake-bin"
    bin_dir.mkdir()
    npx = bin_dir / "npx"
    npx.write_text(FAKE_NPX)
    npx.chmod(0o755)
    body = {
        "id": "offline",
        "name": "Offline",
        "transport": "stdio",
        "command": str(npx),
        "args": ["-y", "fake-package"],
        "sandbox": {"network": "none", "paths": [{"path": str(bin_dir)}]},
    }
    with api(a) as client_a:
        created = client_a.post(SERVERS, json=body)
        assert created.status_code == 201, created.text
        trusted = client_a.post(f"{SERVERS}/offline/trust", json={"digest": created.json()["digest"]})
        assert trusted.status_code == 200, trusted.text
        warmed = client_a.post(f"{SERVERS}/offline/sandbox/warm-up")
    assert warmed.status_code == 200, warmed.text
    result = warmed.json()
    assert (result["ok"], result["instance"], result["others"]) == (True, "a", ["b"]), result
    assert warmed_packages(a, "offline") == ["fake-package"]
    assert eventually_sync(lambda: warmed_packages(b, "offline"), timeout_s=30) == ["fake-package"]
    late = start_instance("c", instances["root"], instances["env"], instances["url"])
    instances["stack"].callback(lambda: stop_process(late.proc))
    wait_serving(late)
    assert eventually_sync(lambda: warmed_packages(late, "offline"), timeout_s=30) == ["fake-package"]
    assert warmed_packages(a, "offline") == ["fake-package"], "the instance that answered warms once"
    assert warmed_packages(b, "offline") == ["fake-package"]
