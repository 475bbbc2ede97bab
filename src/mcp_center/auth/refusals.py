"""The OAuth errors a request or a callback gets when only a user can help (R-4.5, R-4.9, issue 14 item 16).

- `authorization_required`: the server needs an authorization (never given, the token was refused
  and could not be renewed, the refresh token was revoked, ...); `details.hint` says which.
- `step_up_error`: a `403 insufficient_scope` needs more scopes (`OAuthStepUpRequired`), or
  `MAX_STEP_UP_AUTHORIZATIONS` step-ups already failed to satisfy the same operation
  (`OAuthStepUpLimitReached`, no loops).
- `code_refused`: an authorization code the authorization server refused with a 4xx is a bad
  callback (the user starts again), not an upstream failure.

The first two remember the error in the server's `ServerAuth.last_error` for its view.
"""

from __future__ import annotations

import logging
from typing import Any, Final

from mcp.client.auth.utils import union_scopes

from mcp_center.auth.discovery import Challenge
from mcp_center.auth.state import ServerAuth, StepUp
from mcp_center.auth.target import OAuthTarget
from mcp_center.errors import (
    CenterError,
    OAuthAuthorizationRequired,
    OAuthCallbackInvalid,
    OAuthStepUpLimitReached,
    OAuthStepUpRequired,
    OAuthTokenFailed,
)
from mcp_center.models import ErrorReason

__all__ = ["MAX_STEP_UP_AUTHORIZATIONS", "authorization_required", "code_refused", "step_up_error"]

logger = logging.getLogger(__name__)

MAX_STEP_UP_AUTHORIZATIONS: Final = 2
"""Step-up authorizations in a row that may fail to satisfy the server before the broker stops (R-4.5).
With the first authorization that makes at most three authorizations, as SEP-835's retry limit asks."""

_MESSAGES: Final = {
    "not_authorized": "the server requires authorization; a user must authorize it (POST .../oauth/start)",
    "rejected": "the server rejected the access token and it could not be renewed; authorize again",
    "invalid_grant": "the authorization server revoked the refresh token; authorize again",
    "invalid_client": "the authorization server no longer knows this client; authorize again",
    "issuer_changed": "the server now names another authorization server; authorize again to bind it",
    "renewal_failed": "the access token could not be renewed; authorize again or check the server",
    "refresh_refused": "the authorization server refused the refresh token; authorize again",
}


def authorization_required(
    state: ServerAuth, target: OAuthTarget, *, hint: str, cause: CenterError | None = None
) -> OAuthAuthorizationRequired:
    """The error a request gets when only a user can help (R-4.9); remembered in `state.last_error`.

    Args:
        hint: One of `not_authorized`, `rejected`, `invalid_grant`, `invalid_client`, `issuer_changed`,
            `renewal_failed`, `refresh_refused` (an unknown hint reads as `not_authorized`).
        cause: The error behind it; only its `code` goes into `details.cause`.
    """
    details: dict[str, Any] = {
        "reason": ErrorReason.AUTH_REQUIRED.value,
        "hint": hint,
        "server_id": target.server_id,
    }
    if cause is not None:
        details["cause"] = cause.code
    error = OAuthAuthorizationRequired(
        f"server '{target.server_id}': {_MESSAGES.get(hint, _MESSAGES['not_authorized'])}", details=details
    )
    state.last_error = error.to_dict()
    return error


def step_up_error(state: ServerAuth, target: OAuthTarget, challenge: Challenge, operation: str) -> CenterError:
    """The error for a `403 insufficient_scope` (R-4.5): step-up needed, or the loop limit reached.

    Args:
        state: The server's state (its binding's step-up bookkeeping is updated).
        operation: What was refused (`tools/call:<name>`, `tools/list`, ...): the loop limit counts
            step-up authorizations after which the same operation is still refused.
    """
    binding = target.binding
    access = state.access(binding)
    granted = access.scope if access is not None else None
    wanted = union_scopes(granted, challenge.scope) or ""
    if binding is None:
        return authorization_required(state, target, hint="not_authorized")
    bound = state.binding(binding)
    if bound.step_up is None:
        bound.step_up = StepUp(wanted)
    step = bound.step_up
    step.scopes = union_scopes(step.scopes, wanted) or wanted
    step.operations.add(operation)
    scopes = step.scopes.split()
    if step.authorizations >= MAX_STEP_UP_AUTHORIZATIONS:
        error: CenterError = OAuthStepUpLimitReached(
            f"server '{target.server_id}' still answers insufficient_scope after {step.authorizations} step-up "
            "authorizations; not asking again",
            details={
                "reason": ErrorReason.STEP_UP_REQUIRED.value,
                "scopes": scopes,
                "attempts": step.authorizations + 1,
                "server_id": target.server_id,
            },
        )
    else:
        error = OAuthStepUpRequired(
            f"server '{target.server_id}' needs more scopes ({' '.join(scopes)}); a user must authorize them "
            "(POST .../oauth/start)",
            details={"reason": ErrorReason.STEP_UP_REQUIRED.value, "scopes": scopes, "server_id": target.server_id},
        )
    logger.info("oauth.step_up_required", extra={"server_id": target.server_id, "code": error.code})
    state.last_error = error.to_dict()
    return error


def code_refused(exc: OAuthTokenFailed, server_id: str) -> OAuthCallbackInvalid | None:
    """A code exchange the authorization server answered with a 4xx is a bad callback (issue 14 item 16):
    the user must start again, nothing upstream is broken. A 5xx, a network failure or an unreadable
    answer stays `OAuthTokenFailed` (502): None."""
    status = exc.details.get("status")
    if not isinstance(status, int) or not 400 <= status < 500:
        return None
    oauth_error = exc.details.get("oauth_error")
    said = f" ({oauth_error})" if isinstance(oauth_error, str) else ""
    hint = exc.details.get("hint")
    return OAuthCallbackInvalid(
        f"the authorization server refused the authorization code for server '{server_id}'{said}, HTTP {status}; "
        "start the authorization again",
        details={
            "reason": "code_rejected",
            "server_id": server_id,
            "oauth_error": oauth_error,
            "status": status,
            **({"hint": hint} if hint else {}),
        },
    )
