"""What the OAuth broker keeps in memory, one state object per server (R-4.5, R-4.7, R-9.2).

`ServerAuth` is everything the broker remembers of one server between requests: per binding (the
server, its canonical resource and issuer; usually one) the access token in memory, the renewal lock
and the step-up bookkeeping, plus the server's last 401/403 challenge, the issuers a user must choose
among and the last error shown in the server's view. `AuthStates` holds them by server id.

Nothing here is persisted: the vault (`auth/vault.py`) keeps the encrypted grant, and an access
token found here is also stored there for other processes. `drop()` forgets a server but keeps its
renewal locks, so a renewal still in flight stays single-flight with one that starts after it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import anyio

from mcp_center.auth.discovery import Challenge
from mcp_center.auth.vault import Binding

__all__ = ["AccessToken", "AuthStates", "BindingState", "ServerAuth", "StepUp"]


@dataclass
class AccessToken:
    """An access token in memory: `expires_at` in wall-clock seconds (None: no expiry said)."""

    token: str = field(repr=False)
    expires_at: float | None
    scope: str | None


@dataclass
class StepUp:
    """Step-up bookkeeping of one binding: the scopes to ask for, the refused operations, and how many
    step-up authorizations were completed while one of those operations kept being refused."""

    scopes: str
    operations: set[str] = field(default_factory=set[str])
    authorizations: int = 0


@dataclass
class BindingState:
    """One binding's renewal lock (single-flight inside the process), access token and step-up state."""

    lock: anyio.Lock = field(default_factory=anyio.Lock)
    access: AccessToken | None = None
    step_up: StepUp | None = None


@dataclass
class ServerAuth:
    """Everything the broker remembers of one server (see the module docstring).

    Attributes:
        bindings: Per binding of the server, its lock, token and step-up state.
        challenge: `(resource, challenge)` of the server's last 401/403; used only while the
            server's resource is still that one.
        issuer_choices: The issuers a user must choose among (R-4.3), or None.
        last_error: The error dict (`CenterError.to_dict()`) the server's view shows, or None.
    """

    bindings: dict[Binding, BindingState] = field(default_factory=dict[Binding, BindingState])
    challenge: tuple[str, Challenge] | None = None
    issuer_choices: tuple[str, ...] | None = None
    last_error: dict[str, Any] | None = None

    def binding(self, binding: Binding) -> BindingState:
        """The state of `binding` (created on first use)."""
        return self.bindings.setdefault(binding, BindingState())

    def access(self, binding: Binding | None) -> AccessToken | None:
        """The access token in memory for `binding`, fresh or not (None for no binding)."""
        state = self.bindings.get(binding) if binding is not None else None
        return state.access if state is not None else None

    def challenge_for(self, resource: str) -> Challenge | None:
        """The last challenge, if it was answered for `resource` (the server's resource now)."""
        if self.challenge is None or self.challenge[0] != resource:
            return None
        return self.challenge[1]

    def step_up(self, binding: Binding | None) -> StepUp | None:
        """The step-up bookkeeping of `binding`, if a 403 started one."""
        state = self.bindings.get(binding) if binding is not None else None
        return state.step_up if state is not None else None


class AuthStates:
    """The `ServerAuth` of every server the broker has seen, by server id."""

    def __init__(self) -> None:
        self._servers: dict[str, ServerAuth] = {}

    def of(self, server_id: str) -> ServerAuth:
        """The server's state (created on first use)."""
        return self._servers.setdefault(server_id, ServerAuth())

    def peek(self, server_id: str) -> ServerAuth:
        """The server's state, or an empty one that is not kept (for readers such as `status()`)."""
        return self._servers.get(server_id) or ServerAuth()

    def drop(self, server_id: str) -> None:
        """Forget the server's tokens, step-ups, challenge, issuer choices and last error; keep its locks."""
        state = self._servers.get(server_id)
        if state is None:
            return
        state.bindings = {binding: BindingState(lock=kept.lock) for binding, kept in state.bindings.items()}
        state.challenge = None
        state.issuer_choices = None
        state.last_error = None
