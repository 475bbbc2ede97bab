"""The web settings page: a server-rendered shell and login (Jinja2), vanilla JavaScript views on the REST API.

`install_web` adds the page to the app `mcp_center.api.create_api` built; `BrowserSessions` is the
session table both share (the API accepts its cookie under the origin and CSRF checks, R-7.2).
"""

from mcp_center.web.csrf import CSRF_HEADER, SESSION_COOKIE, BrowserSessions
from mcp_center.web.routes import install_web

__all__ = ["CSRF_HEADER", "SESSION_COOKIE", "BrowserSessions", "install_web"]
