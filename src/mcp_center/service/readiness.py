"""Readiness: the one home of the trust → test → enable rule (R-2.1 to R-2.5).

A server runs only when all of these hold for its *current* connection summary digest:

1. the profile allows it (R-2.5, R-11.2: `production` starts a stdio server only sandboxed);
2. the user confirmed that digest (`trusted_digest == digest`, R-2.1);
3. its last test ran with that digest and succeeded (R-2.2);
4. it is enabled (R-2.3).

Every use case that starts, tests, authorizes or enables a server asks `Readiness` instead of
comparing digests itself: `McpCenter.test` needs (1, 2), `McpCenter.enable` (1, 2, 3), a call or a
catalog read (1 to 4), `OAuthService.start` (2), reconcile (1 to 4, silently). The view's `needs`
list is the same rule, spelled as the steps still missing. Messages name the step, not a face's
endpoint: a library user, the CLI and the REST API all read them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from mcp_center.config import ServerConfig, StdioServerConfig
from mcp_center.config.settings import Profile
from mcp_center.errors import SandboxRequired, ServerDisabled, ServerNotTested, ServerNotTrusted
from mcp_center.models import ErrorReason
from mcp_center.store import ServerRecord

__all__ = ["Need", "Readiness", "check_profile", "unconfined_in_production"]

Need = Literal["sandbox", "trust", "test", "enable"]
"""A step a server still needs before it runs (the view's `needs`, in this order)."""


def unconfined_in_production(config: ServerConfig, profile: Profile) -> bool:
    """True when `profile` forbids starting `config` (R-2.5, R-11.2: production starts a stdio server
    only with a sandbox policy)."""
    return isinstance(config, StdioServerConfig) and config.sandbox is None and profile is Profile.PRODUCTION


def check_profile(config: ServerConfig, profile: Profile) -> None:
    """Refuse a server the profile does not start (R-2.5).

    Raises:
        SandboxRequired: a stdio server under the production profile.
    """
    if unconfined_in_production(config, profile):
        raise SandboxRequired(
            "the production profile runs stdio servers only sandboxed: give this server a sandbox policy "
            '(for example "sandbox": {"network": "none"}) and confirm the new summary',
            details={"server_id": config.id, "profile": profile.value, "reason": ErrorReason.SANDBOX_REQUIRED.value},
        )


@dataclass(frozen=True, slots=True)
class Readiness:
    """Where one server stands on the trust → test → enable path, for one digest (R-2).

    Attributes:
        record: The server record it was computed from.
        digest: The current connection summary digest (`sha256:<hex>`).
        profile: The host profile (R-2.5).
    """

    record: ServerRecord
    digest: str
    profile: Profile

    @property
    def trusted(self) -> bool:
        """The user confirmed exactly this digest (R-2.1)."""
        return self.record.trusted_digest == self.digest

    @property
    def tested(self) -> bool:
        """The last test ran with this digest and succeeded (R-2.2)."""
        test = self.record.last_test
        return test is not None and test.ok and test.digest == self.digest

    @property
    def needs(self) -> list[Need]:
        """The steps still missing before the server runs, in order; empty when it runs."""
        needs: list[Need] = []
        if unconfined_in_production(self.record.config, self.profile):
            needs.append("sandbox")
        if not self.trusted:
            needs.append("trust")
        if not self.tested:
            needs.append("test")
        if not self.record.enabled:
            needs.append("enable")
        return needs

    @property
    def runnable(self) -> bool:
        """Every step is done: the server may have a long-lived connection (R-3.3)."""
        return not self.needs

    def require_trusted(self, before: str) -> None:
        """Raise unless the profile allows the server and its current digest is confirmed.

        Args:
            before: What the caller is about to do (`"testing"`), for the message.
        Raises:
            SandboxRequired (R-2.5); ServerNotTrusted (409, `details.current_digest`).
        """
        check_profile(self.record.config, self.profile)
        if not self.trusted:
            raise ServerNotTrusted(
                f"confirm the current connection summary (trust its digest) before {before}",
                details={"server_id": self.record.id, "current_digest": self.digest},
            )

    def require_tested(self, before: str) -> None:
        """`require_trusted`, and the last test of this digest succeeded.

        Raises:
            SandboxRequired; ServerNotTrusted; ServerNotTested (409, `details.current_digest`).
        """
        self.require_trusted(before)
        if not self.tested:
            raise ServerNotTested(
                f"run a successful test of the current configuration before {before}",
                details={"server_id": self.record.id, "current_digest": self.digest},
            )

    def require_runnable(self) -> None:
        """Raise unless the server may run now (a call, a catalog read, the debugger).

        Raises:
            SandboxRequired; ServerDisabled (409, `details.needs`: every step still missing, so a
            hint names the first, `trust` before `enable`); ServerNotTrusted / ServerNotTested
            (409, `details.needs`).
        """
        server_id = self.record.id
        check_profile(self.record.config, self.profile)
        needs = self.needs
        if not self.record.enabled:
            raise ServerDisabled(
                f"server '{server_id}' is not enabled", details={"server_id": server_id, "needs": needs}
            )
        if "trust" in needs:
            raise ServerNotTrusted(
                f"server '{server_id}' changed since it was trusted; confirm the new summary",
                details={"needs": needs},
            )
        if "test" in needs:
            raise ServerNotTested(f"server '{server_id}' needs a successful test", details={"needs": needs})
