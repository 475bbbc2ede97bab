"""Shared fixtures: anyio backend, an isolated data directory, an open `McpCenter`, an API client, the
worker's shared `mcp-center serve`.

Every fixture is hermetic: the data directory is a fresh temp dir, the admin token and secret key
are generated per test, and the host environment's `MCP_CENTER_*` variables are ignored. The shared
serve is lent to one test at a time and looks just started at each turn (`tests/support/shared_host.py`).
"""

from __future__ import annotations

import gc
from collections.abc import AsyncGenerator, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from mcp_center.api import create_api
from mcp_center.config import Settings
from mcp_center.secrets import install_log_redaction
from mcp_center.service import McpCenter
from mcp_center.store import JsonStore, Store, store_for
from tests.support.api import ADMIN_TOKEN
from tests.support.mcp_servers import node_server, running_echo_http
from tests.support.ordering import LongFirstScheduling, long_first_rank
from tests.support.postgres import PgCluster
from tests.support.serve import Host
from tests.support.shared_host import SharedHost
from tests.support.spare_serves import SpareServes
from tests.support.zygote import close_zygote

install_log_redaction()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The long tests first (`tests/support/ordering.py`), so that none starts last and ends the run
    alone on one xdist worker (issue 16); every other test keeps its order (a stable sort). The
    browser tests are moved after all the others afterwards (tests/web/conftest.py, trylast)."""
    items.sort(key=lambda item: long_first_rank(item.nodeid))


def pytest_collection_finish() -> None:
    """Collect, then freeze (`gc.freeze`) what this process holds once its tests are collected: the
    modules of src/ and tests/, the SDK, pydantic and fastapi models, hypothesis' tables (issue 16).

    Those objects live as long as the process. Left in the oldest generation, each full collection
    walked all of them again (tens of them per worker, ~0.2 s of CPU each); frozen, a collection walks
    only what the tests made since, and their garbage is found as before. `serve` does the same with
    its startup heap (`mcp_center.app.freeze_startup_heap`, R-8.3)."""
    gc.collect()
    gc.freeze()


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> LongFirstScheduling | None:
    """With xdist's default `--dist load`: tests one at a time in this order, `ONE_WORKER` modules
    whole (`tests/support/ordering.py`, issue 16); any other `--dist` keeps xdist's scheduler."""
    if config.getoption("dist", None) != "load":
        return None
    return LongFirstScheduling(config, log)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish() -> None:
    """Stop this process's fork server of test serves, if it started one (`tests/support/zygote.py`);
    the session's fixtures, and the serves they own, are torn down by then."""
    close_zygote()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def echo_url() -> Iterator[str]:
    """The echo MCP server (`tests/servers/http_echo.py`) over Streamable HTTP on loopback, one per
    worker (it keeps no state between MCP sessions; issue 16); yields its /mcp URL. Modules that
    need an in-process server of their own override it."""
    with running_echo_http() as url:
        yield url


@pytest.fixture(scope="session")
def caps_url() -> Iterator[str]:
    """The capability server (`tests/servers/capabilities.py`: prompts, resources, `record`, `ask`...)
    over Streamable HTTP on loopback, one per worker: tests over HTTP read only what it answers (what
    it records stays in its own process; issue 16); yields its /mcp URL."""
    with running_echo_http("tests.servers.run_capabilities") as url:
        yield url


@pytest.fixture(scope="session")
def shared_host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SharedHost]:
    """The worker's `mcp-center serve`, lent to one test at a time (`tests/support/shared_host.py`):
    one for the browser tests and the end-to-end tests of that worker together (issue 16)."""
    pool = SharedHost(tmp_path_factory.mktemp("shared-serve"))
    yield pool
    pool.close()


@pytest.fixture(scope="session")
def spare_serves(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SpareServes]:
    """The worker's serves of their own for the tests marked `own_serve`, each spawned while the
    previous such test runs (`tests/support/spare_serves.py`, issue 16)."""
    pool = SpareServes(tmp_path_factory.mktemp("own-serves"))
    yield pool
    pool.close()


@pytest.fixture(scope="session")
def everything_http() -> Iterator[str]:
    """server-everything in Streamable HTTP mode, one per worker for its end-to-end and browser tests
    (each talks to it in its own MCP session, and it serves each session from a server of its own;
    issue 16); yields its base URL (endpoint at /mcp)."""
    with node_server("streamableHttp") as url:
        yield url


@pytest.fixture
def shared_serve(request: pytest.FixtureRequest) -> Iterator[Host]:
    """A real `mcp-center serve` on a loopback port (admin token `ADMIN_TOKEN`) that looks just started
    through the REST API and /proc: no server, gateway token, card, approval or child process. It is
    the worker's shared serve when the last test left it clean (its servers and tokens are removed
    afterwards), else a new one. A test marked `own_serve` (it leaves a card or an approval, which
    stay as history the API does not delete, or more than is quick to remove: 100 gateway tokens)
    gets a serve of its own from `spare_serves` instead (started ahead, stopped and checked after
    the test), so the shared one is not thrown away after it. A test that stops, restarts or reads
    the files of its serve starts its own with `running_host`."""
    if request.node.get_closest_marker("own_serve") is not None:
        spares: SpareServes = request.getfixturevalue("spare_serves")
        with spares.take() as own:
            yield own
        return
    pool: SharedHost = request.getfixturevalue("shared_host")
    yield pool.lend()
    pool.take_back(request.node.nodeid)


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def settings(data_dir: Path) -> Settings:
    return Settings.load(data_dir=data_dir, environ={})


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[PgCluster]:
    """One throwaway PostgreSQL 15 cluster for the whole run (`tests/support/postgres.py`), stopped at the end."""
    cluster = PgCluster()
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.close()


@pytest.fixture
def database_url(pg_cluster: PgCluster) -> Iterator[str]:
    """A fresh, empty database of the test cluster (dropped afterwards)."""
    url = pg_cluster.database()
    yield url
    pg_cluster.drop(url)


@pytest.fixture(params=["files", "postgres"])
def backend(request: pytest.FixtureRequest) -> str:
    """The store backend a test runs on: both, for the store and service modules that ask (R-10.1)."""
    return str(request.param)


@pytest.fixture
def shared_settings(data_dir: Path, backend: str, request: pytest.FixtureRequest) -> Settings:
    """Settings on `backend`: the data directory's files, or a fresh PostgreSQL database."""
    if backend == "postgres":
        url = request.getfixturevalue("database_url")
        return Settings.load(data_dir=data_dir, database_url=url, environ={})
    return Settings.load(data_dir=data_dir, environ={})


@pytest.fixture
def make_store(shared_settings: Settings) -> Iterator[Callable[[], Store]]:
    """Opens another store on the same shared data each call (another process's view of it); all
    are closed at the end. File stores poll their change feed every 0.02 s."""
    made: list[Store] = []

    def make() -> Store:
        store: Store = (
            store_for(shared_settings)
            if shared_settings.database_url
            else JsonStore(shared_settings.mcp_dir, poll_s=0.02)
        )
        store.open()
        made.append(store)
        return store

    yield make
    for store in made:
        store.close()


@pytest.fixture
async def center(settings: Settings) -> AsyncGenerator[McpCenter]:
    async with McpCenter.open(settings) as opened:
        yield opened


@pytest.fixture
async def api(center: McpCenter, settings: Settings) -> AsyncGenerator[httpx2.AsyncClient]:
    """An API client (admin token set) for the app in process, backed by `center`."""
    app = create_api(settings, ADMIN_TOKEN)
    app.state.center = center
    transport = httpx2.ASGITransport(app=app)
    async with httpx2.AsyncClient(
        transport=transport, base_url="http://127.0.0.1:8765", headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}
    ) as client:
        yield client
