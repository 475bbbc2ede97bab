"""A page's address typed or pasted without its '#' (issue 16): `/servers/crashy` in a browser showed
the API's raw JSON 404; the page lives at `/#/servers/crashy`. No browser: the real app over ASGI.
"""

from __future__ import annotations

from pathlib import Path

import httpx2
import pytest

from mcp_center.app import create_app
from mcp_center.config import Settings
from tests.support.api import BASE_URL

pytestmark = pytest.mark.anyio

HTML = {"Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}


@pytest.mark.parametrize(
    ("path", "location"),
    [
        ("/servers/crashy", "/#/servers/crashy"),
        ("/servers/crashy/logs", "/#/servers/crashy/logs"),
        ("/gateway", "/#/gateway"),
        ("/inbox", "/#/inbox"),
        ("/new", "/#/new"),
    ],
)
async def test_a_browser_asking_for_a_page_path_is_sent_to_its_hash_route(
    tmp_path: Path, path: str, location: str
) -> None:
    settings = Settings.load(data_dir=tmp_path / "data", environ={"MCP_CENTER_ADMIN_TOKEN": "t" * 32})
    app, _, _ = create_app(settings)
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url=BASE_URL) as client:
        answer = await client.get(path, headers=HTML)
        assert (answer.status_code, answer.headers["location"]) == (303, location)
        # Not a browser (no text/html wanted): the 404 envelope every unknown path gets.
        plain = await client.get(path, headers={"Accept": "application/json"})
        assert (plain.status_code, plain.json()["error"]["code"]) == (404, "NOT_FOUND")
        # Only the page's own routes: anything else stays a 404, for a browser too.
        other = await client.get(f"/nothing{path}", headers=HTML)
        assert other.status_code == 404
