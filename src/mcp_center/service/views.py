"""Server views: what a face shows of one server (R-1.1 fields, version, summary, digest, status).

A view is built from one store snapshot, one computed `Summary` and one `Readiness`: the summary
and digest are computed once per view (`summary.Summaries`), and `needs`, `trusted` and `tested`
come from the one readiness rule (`readiness.py`). Secret values never appear: secrets show only
whether they are set (R-1.5). Warnings point at problems the user should see before trusting
(R-2.1); they do not block.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcp_center.config import OAUTH_CLIENT_SECRET_KEYS, AuthBearer, AuthOAuth, StdioServerConfig
from mcp_center.interchange.credentials import (
    CREDENTIAL_IN_ARGS_MESSAGE,
    credential_query_params,
    is_credential_name,
    is_credential_value,
)
from mcp_center.runtime import ServerStatus
from mcp_center.service.readiness import Readiness
from mcp_center.service.records import editable
from mcp_center.service.summary import Summary

__all__ = ["server_view", "summary_warnings"]


def _configured(entries: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, bool]]:
    return {name: {"configured": bool(entry["configured"])} for name, entry in entries.items()}


def server_view(
    readiness: Readiness, summary: Summary, status: ServerStatus, oauth: dict[str, Any] | None
) -> dict[str, Any]:
    """The API view of one server (JSON-ready).

    Args:
        readiness: The record and its readiness for `summary.digest`.
        summary: The record's current connection summary.
        status: Its runtime status in this process.
        oauth: `OAuthService.status` for an OAuth server, else None.
    Returns:
        The R-1.1 fields, then `enabled`, `version`, `created_at`, `updated_at` (ISO 8601),
        `trusted_digest`, `trusted`, `last_test`, `tested`, `summary`, `digest`, `needs`, `warnings`
        (`[{"code", "message"}]`) and `status`; secrets as `{"configured": bool}` only.
    """
    record = readiness.record
    config = record.config
    data = summary.data
    view: dict[str, Any] = editable(config)
    if isinstance(config, StdioServerConfig):
        view["secret_env"] = _configured(data["secret_env"])
    else:
        view["secret_headers"] = _configured(data["secret_headers"])
        if isinstance(config.auth, AuthBearer):
            view["auth"] = {"kind": "bearer", "token": {"configured": bool(data["auth"]["token"]["configured"])}}
        elif isinstance(config.auth, AuthOAuth):
            configured = data["auth"]
            view["auth"].update(
                {k: {"configured": bool(configured[k]["configured"])} for k in OAUTH_CLIENT_SECRET_KEYS}
            )
            view["oauth"] = oauth
    last_test = record.last_test.model_dump(mode="json") if record.last_test else None
    view.update(
        enabled=record.enabled,
        version=record.version,
        created_at=record.created_at.isoformat(),
        updated_at=record.updated_at.isoformat(),
        trusted_digest=record.trusted_digest,
        trusted=readiness.trusted,
        last_test=last_test,
        tested=readiness.tested,
        summary=data,
        digest=summary.digest,
        needs=readiness.needs,
        warnings=summary_warnings(data),
        status=status.to_dict(),
    )
    return view


def summary_warnings(summary: Mapping[str, Any]) -> list[dict[str, str]]:
    """Problems the user should see before trusting: they do not block, but the test will fail.

    Returns:
        `[{"code", "message"}]`: COMMAND_NOT_FOUND, URL_NOT_ASCII, URL_QUERY_CREDENTIAL,
        CREDENTIAL_IN_PLAIN_FIELD, CREDENTIAL_IN_ARGS, SECRET_NOT_SET.
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
    for i, arg in enumerate(args):
        if isinstance(arg, str) and is_credential_value(arg):
            warnings.append({"code": "CREDENTIAL_IN_ARGS", "message": f"argument {i + 1} {CREDENTIAL_IN_ARGS_MESSAGE}"})
    secrets: Mapping[str, Mapping[str, Any]]
    for kind in ("secret_env", "secret_headers"):
        secrets = summary.get(kind) or {}
        for name, entry in secrets.items():
            if not entry.get("configured"):
                warnings.append({"code": "SECRET_NOT_SET", "message": f"the secret '{name}' has no value yet"})
    return warnings
