"""`BoundBearerAuth`: the `httpx2.Auth` of one OAuth connection (R-4.7, R-4.9).

It attaches the in-memory access token of the server's binding, renews it at most once per request
(after a 401, or before the request when the token is missing or about to expire) against the bound
token endpoint, and otherwise raises a typed error: `OAuthAuthorizationRequired` (a user must log in)
or `OAuthStepUpRequired` / `OAuthStepUpLimitReached` (403 `insufficient_scope`, R-4.5). It never starts
an interactive login: a background connection only ends in an error state (R-4.9).

Raising inside an auth flow tears the connection down (docs/sdk-notes.md#oauth-broker): the runtime attributes the
failure to the error recorded in `failure` (`runtime.attribution`). Every 401/403 challenge is
handed to the broker, so a later `oauth/start` uses the server's own scope and metadata URL.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from typing import Protocol

import httpx2

from mcp_center.auth.discovery import Challenge
from mcp_center.auth.target import OAuthTarget
from mcp_center.errors import CenterError
from mcp_center.models import is_object

__all__ = ["BoundBearerAuth", "TokenBroker", "operation_of"]


class TokenBroker(Protocol):
    """What a `BoundBearerAuth` needs of the OAuth broker (`auth.broker.OAuthBroker` is one).

    A Protocol, so that this module does not import the broker (which builds `BoundBearerAuth`s).
    """

    async def token_for_request(self, target: OAuthTarget) -> tuple[str | None, bool]:
        """`(token or None, renewed for this request)`; raises `OAuthAuthorizationRequired`."""
        ...

    async def after_unauthorized(self, target: OAuthTarget, sent_token: str) -> str | None:
        """A new token after a 401 answered `sent_token`, or None; raises `OAuthAuthorizationRequired`."""
        ...

    def note_challenge(self, target: OAuthTarget, challenge: Challenge) -> None:
        """Remember a 401/403 challenge of the server."""
        ...

    def note_success(self, target: OAuthTarget, operation: str) -> None:
        """An authorized request for `operation` succeeded."""
        ...

    def authorization_required(
        self, target: OAuthTarget, *, hint: str, cause: CenterError | None = None
    ) -> CenterError:
        """The error for a request only a user can help (R-4.9)."""
        ...

    def step_up_error(self, target: OAuthTarget, challenge: Challenge, operation: str) -> CenterError:
        """The error for a `403 insufficient_scope` (R-4.5)."""
        ...


MAX_INSPECTED_BODY = 64 * 1024


def operation_of(request: httpx2.Request) -> str:
    """What an MCP request asks for, for step-up bookkeeping: `<method>` or `<method>:<name>`.

    A GET (the SSE stream) is `GET`; a body that is not one JSON-RPC request is `POST`.
    """
    if request.method != "POST":
        return request.method
    try:
        body = request.content
    except httpx2.RequestNotRead:
        return "POST"
    if len(body) > MAX_INSPECTED_BODY:
        return "POST"
    try:
        message = json.loads(body)
    except ValueError:
        return "POST"
    if not is_object(message) or not isinstance(message.get("method"), str):
        return "POST"
    method: str = message["method"]
    params = message.get("params")
    name = params.get("name") if is_object(params) else None
    return f"{method}:{name}" if isinstance(name, str) else method


class BoundBearerAuth(httpx2.Auth):
    """Bearer auth bound to one server's OAuth binding.

    Args:
        broker: Holds the tokens and renews them.
        target: The server (URL, OAuth configuration, configured credentials).

    Attributes:
        failure: The error the last failed request raised, cleared by the next success; the runtime
            prefers it over the transport's generic "connection closed".
    """

    requires_request_body = True

    def __init__(self, broker: TokenBroker, target: OAuthTarget) -> None:
        self._broker = broker
        self._target = target
        self.failure: CenterError | None = None

    def __repr__(self) -> str:
        return f"BoundBearerAuth(server_id={self._target.server_id!r})"

    async def async_auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        """Attach, send, renew once on 401, raise typed errors (see the module docstring)."""
        broker, target = self._broker, self._target
        self.failure = None  # a new request: an older failure no longer explains what happens next
        try:
            token, renewed = await broker.token_for_request(target)
        except CenterError as exc:
            raise self._fail(exc) from None
        if token is not None:
            request.headers["Authorization"] = f"Bearer {token}"
        response = yield request
        if response.status_code == 401:
            challenge = Challenge.from_response(response)
            broker.note_challenge(target, challenge)
            if token is None:
                raise self._fail(broker.authorization_required(target, hint="not_authorized"))
            if renewed:
                raise self._fail(broker.authorization_required(target, hint="rejected"))
            try:
                fresh = await broker.after_unauthorized(target, token)
            except CenterError as exc:
                raise self._fail(exc) from None
            if fresh is None:
                raise self._fail(broker.authorization_required(target, hint="rejected"))
            request.headers["Authorization"] = f"Bearer {fresh}"
            response = yield request
            if response.status_code == 401:
                broker.note_challenge(target, Challenge.from_response(response))
                raise self._fail(broker.authorization_required(target, hint="rejected"))
        if response.status_code == 403:
            challenge = Challenge.from_response(response)
            if challenge.insufficient_scope:
                broker.note_challenge(target, challenge)
                raise self._fail(broker.step_up_error(target, challenge, operation_of(request)))
        if token is not None and response.status_code < 400:
            self.failure = None
            broker.note_success(target, operation_of(request))

    def _fail(self, error: CenterError) -> CenterError:
        self.failure = error
        return error
