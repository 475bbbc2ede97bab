"""Composition root: build the ASGI app (REST API + settings page) whose lifespan opens `McpCenter` (R-7.1)."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from mcp_center.api import create_api
from mcp_center.config import Settings
from mcp_center.secrets import install_log_redaction, load_or_create_admin_token
from mcp_center.service import McpCenter
from mcp_center.web import BrowserSessions, install_web

__all__ = ["create_app"]


def create_app(settings: Settings) -> tuple[FastAPI, str, bool]:
    """Build the app for `settings`.

    Returns:
        `(app, admin_token, token_created_now)`; `serve` prints the token only when it was
        created now (R-7.1).
    Raises:
        SecretStoreError: the admin token file is unusable.
    """
    install_log_redaction()
    settings.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    token, created = load_or_create_admin_token(settings.data_dir, settings.admin_token)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncGenerator[None]:
        async with McpCenter.open(settings) as center:
            app.state.center = center
            yield

    sessions = BrowserSessions(settings.public_url)
    app = create_api(settings, token, lifespan=lifespan, sessions=sessions)
    install_web(app, settings=settings, admin_token=token, sessions=sessions)
    return app, token, created
