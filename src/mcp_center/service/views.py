"""Server views: what a face shows of one server (R-1.1 fields, version, summary, digest, status).

A view is built from one store snapshot, one computed `Summary` and one `Readiness`: the summary
and digest are computed once per view (`summary.Summaries`), and `needs`, `trusted` and `tested`
come from the one readiness rule (`readiness.py`). Secret values never appear: secrets show only
whether they are set (R-1.5). Warnings point at problems the user should see before trusting
(R-2.1); they do not block.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from mcp_center.config import OAUTH_CLIENT_SECRET_KEYS, AuthBearer, AuthOAuth, ServerConfig, Settings, StdioServerConfig
from mcp_center.config.pinning import unpinned_package
from mcp_center.interchange.credentials import (
    CREDENTIAL_IN_ARGS_MESSAGE,
    credential_args,
    credential_query_params,
    is_credential_name,
    is_credential_value,
)
from mcp_center.runtime import ServerStatus
from mcp_center.service.readiness import Need, Readiness
from mcp_center.service.records import editable
from mcp_center.service.sandboxing import host_facts, sandbox_warnings
from mcp_center.service.summary import Summary
from mcp_center.store import QuarantinedTool, TestResult

__all__ = ["ServerView", "ViewWarning", "server_view", "summary_warnings"]


def _configured(entries: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, bool]]:
    return {name: {"configured": bool(entry["configured"])} for name, entry in entries.items()}


@dataclass(frozen=True, slots=True)
class ViewWarning:
    """A problem to see before trusting (R-2.1): it does not block, but the test will likely fail."""

    code: str
    """COMMAND_NOT_FOUND, URL_NOT_ASCII, URL_QUERY_CREDENTIAL, CREDENTIAL_IN_PLAIN_FIELD, CREDENTIAL_IN_ARGS,
    PACKAGE_NOT_PINNED, SECRET_NOT_SET; SERVER_NAME_SHARED (the answer of a create only);
    TOOL_NOT_KNOWN_YET (the answer of an update naming a tool while the server's tools are not known
    yet, issue 16)."""
    message: str


@dataclass(frozen=True, slots=True)
class ServerView:
    """One server as the library returns it (R-1.1, R-2); `to_dict()` is the REST/CLI JSON.

    Attributes:
        config: The configuration (no secret values).
        version: Bumped on every change; send it back with an update (R-1.3).
        enabled, created_at, updated_at: From the record (aware UTC datetimes).
        trusted_digest: The digest the user confirmed, or None.
        trusted, tested: The current digest is confirmed / was tested successfully (R-2.1, R-2.2).
        last_test: The last stored test result, or None.
        summary: The connection summary (JSON, no secret values; see `summary.py`).
        digest: `sha256:<hex>` of `summary`: what `trust()` takes.
        needs: Steps still missing before the server runs, in order (`readiness.Need`).
        warnings: Problems to see before trusting.
        status: The runtime status in this process.
        oauth: The `oauth` status block of an OAuth server, else None (never a token).
        quarantined: The tools the live session of this process lists whose definition failed
            validation (R-3.6), as that session's catalog has them now; None without a live session.
            `last_test.quarantined` is what the last test saw, and stays so until the next test.
    """

    config: ServerConfig
    version: int
    enabled: bool
    created_at: datetime
    updated_at: datetime
    trusted_digest: str | None
    trusted: bool
    tested: bool
    last_test: TestResult | None
    summary: dict[str, Any]
    digest: str
    needs: tuple[Need, ...]
    warnings: tuple[ViewWarning, ...]
    status: ServerStatus
    oauth: dict[str, Any] | None
    sandbox_host: dict[str, Any] | None = None
    """What this host makes of a stdio server's sandbox policy (`sandboxing.host_facts`), else None."""
    quarantined: tuple[QuarantinedTool, ...] | None = None

    @property
    def id(self) -> str:
        """The server id."""
        return self.config.id

    def to_dict(self) -> dict[str, Any]:
        """The JSON view the REST API and the CLI show.

        Returns:
            The R-1.1 fields, then `enabled`, `version`, `created_at`, `updated_at` (ISO 8601),
            `trusted_digest`, `trusted`, `last_test`, `tested`, `summary`, `digest`, `needs`,
            `warnings` (`[{"code", "message"}]`), `status` and `quarantined` (the live session's
            quarantined tools, `[{"name", "reason"}]`, or null without one); secrets as
            `{"configured": bool}` only.
        """
        config, data = self.config, self.summary
        view: dict[str, Any] = editable(config)
        if isinstance(config, StdioServerConfig):
            view["secret_env"] = _configured(data["secret_env"])
        else:
            view["secret_headers"] = _configured(data["secret_headers"])
            if isinstance(config.auth, AuthBearer):
                view["auth"] = {"kind": "bearer", "token": {"configured": bool(data["auth"]["token"]["configured"])}}
            elif isinstance(config.auth, AuthOAuth):
                auth: dict[str, Any] = data["auth"]
                view["auth"].update({k: {"configured": bool(auth[k]["configured"])} for k in OAUTH_CLIENT_SECRET_KEYS})
                view["oauth"] = self.oauth
        view.update(
            enabled=self.enabled,
            version=self.version,
            created_at=self.created_at.isoformat(),
            updated_at=self.updated_at.isoformat(),
            trusted_digest=self.trusted_digest,
            trusted=self.trusted,
            last_test=self.last_test.model_dump(mode="json") if self.last_test else None,
            tested=self.tested,
            summary=data,
            digest=self.digest,
            needs=list(self.needs),
            warnings=[{"code": w.code, "message": w.message} for w in self.warnings],
            status=self.status.to_dict(),
            quarantined=None if self.quarantined is None else [q.model_dump(mode="json") for q in self.quarantined],
        )
        if isinstance(config, StdioServerConfig):
            view["sandbox_host"] = self.sandbox_host
        return view


def server_view(
    readiness: Readiness,
    summary: Summary,
    status: ServerStatus,
    oauth: dict[str, Any] | None,
    settings: Settings,
    quarantined: tuple[QuarantinedTool, ...] | None = None,
) -> ServerView:
    """The view of one server.

    Args:
        readiness: The record and its readiness for `summary.digest`.
        summary: The record's current connection summary.
        status: Its runtime status in this process.
        oauth: `OAuthService.status` for an OAuth server, else None.
        settings: Host settings (the sandbox warnings, R-11.1).
        quarantined: The live session's quarantined tools (R-3.6), or None without a live session.
    """
    record = readiness.record
    warnings = summary_warnings(summary.data) + sandbox_warnings(
        record.config, summary.data, settings, record.created_at
    )
    return ServerView(
        config=record.config,
        version=record.version,
        enabled=record.enabled,
        created_at=record.created_at,
        updated_at=record.updated_at,
        trusted_digest=record.trusted_digest,
        trusted=readiness.trusted,
        tested=readiness.tested,
        last_test=record.last_test,
        summary=summary.data,
        digest=summary.digest,
        needs=tuple(readiness.needs),
        warnings=tuple(ViewWarning(w["code"], w["message"]) for w in warnings),
        status=status,
        oauth=oauth,
        sandbox_host=host_facts(record.config, record.created_at)
        if isinstance(record.config, StdioServerConfig)
        else None,
        quarantined=quarantined,
    )


def summary_warnings(summary: Mapping[str, Any]) -> list[dict[str, str]]:
    """Problems the user should see before trusting: they do not block, but the test will fail.

    Returns:
        `[{"code", "message"}]`: COMMAND_NOT_FOUND, URL_NOT_ASCII, URL_QUERY_CREDENTIAL,
        CREDENTIAL_IN_PLAIN_FIELD, CREDENTIAL_IN_ARGS, PACKAGE_NOT_PINNED (`npx -y pkg` with no
        version, issue 16), SECRET_NOT_SET.
    """
    warnings: list[dict[str, str]] = []
    if summary.get("transport") == "stdio" and summary.get("command_path") is None:
        warnings.append(
            {
                "code": "COMMAND_NOT_FOUND",
                "message": f"'{summary.get('command')}' was not found on the host's PATH; "
                "install it (or use an absolute path) before testing",
            }
        )
    url = summary.get("url")
    if isinstance(url, str) and not url.isascii():
        warnings.append(
            {
                "code": "URL_NOT_ASCII",
                "message": f"the URL has non-ASCII characters; it connects to {summary.get('origin')} "
                "(check that this is the site you expect)",
            }
        )
    if isinstance(url, str):
        warnings += [
            {
                "code": "URL_QUERY_CREDENTIAL",
                "message": f"query parameter '{name}' looks like a credential; it is stored in plain text with "
                "the URL and shown in summaries and exports (prefer a secret header if the server accepts one)",
            }
            for name in credential_query_params(url)
        ]
    plain: Mapping[str, Any]
    for kind, label in (("env", "environment variable"), ("headers", "header")):
        plain = summary.get(kind) or {}
        for name, value in plain.items():
            if is_credential_name(name) or (isinstance(value, str) and is_credential_value(value)):
                warnings.append(
                    {
                        "code": "CREDENTIAL_IN_PLAIN_FIELD",
                        "message": f"the {label} '{name}' looks like a credential but is stored in plain text "
                        "and shown in summaries and exports: make it a secret (write-only, encrypted)",
                    }
                )
    args: list[Any] = summary.get("args") or []
    for i in credential_args([arg if isinstance(arg, str) else "" for arg in args]):
        warnings.append({"code": "CREDENTIAL_IN_ARGS", "message": f"argument {i + 1} {CREDENTIAL_IN_ARGS_MESSAGE}"})
    command = summary.get("command")
    unpinned = unpinned_package(command, [str(a) for a in args]) if isinstance(command, str) else None
    if unpinned is not None:
        warnings.append({"code": "PACKAGE_NOT_PINNED", "message": unpinned.message})
    secrets: Mapping[str, Mapping[str, Any]]
    for kind in ("secret_env", "secret_headers"):
        secrets = summary.get(kind) or {}
        for name, entry in secrets.items():
            if not entry.get("configured"):
                warnings.append({"code": "SECRET_NOT_SET", "message": f"the secret '{name}' has no value yet"})
    return warnings
