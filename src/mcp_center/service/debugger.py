"""The debugger of one server (R-12.1): server info, live activity, log level, a JSON-RPC console, completion.

What the MCP Inspector shows beside a session, for a server the host runs: its name, version,
negotiated protocol version, capabilities and `instructions`; its log messages (with a
`logging/setLevel` control), its notifications and the progress of running calls
(`runtime/activity.py`); any request sent by hand, with the request, the answer and its timing;
and argument completion (`completion/complete`) for prompt and resource-template forms.

Threats: the console is the admin acting (the REST API behind the admin token, CSRF-checked for the
page, R-7.1, R-7.2); every request goes through the live session, so the tap records it in the
request log like any call (R-3.11) and redacts the answer (R-1.5). `initialize` and notifications
are refused: re-initializing a live session, or speaking for the host, would break it for everyone.
An answer over `MAX_ANSWER_BYTES` is cut (and says so) before it reaches a page.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, cast

import mcp_types as types
from pydantic import ValidationError

from mcp_center.errors import (
    CapabilityNotDeclared,
    FieldError,
    RequestInvalid,
    ServerProtocolError,
    ServerRequestFailed,
)
from mcp_center.models import ErrorReason
from mcp_center.runtime import LOG_LEVELS, ActivityEntry, ConnectionManager
from mcp_center.service.bodies import check_json_safe
from mcp_center.store import ServerRecord

__all__ = [
    "MAX_ANSWER_BYTES",
    "MAX_COMPLETION_VALUES",
    "Completion",
    "ConsoleExchange",
    "Debugger",
    "ServerInfo",
    "console_methods",
]

logger = logging.getLogger(__name__)

MAX_ANSWER_BYTES = 256 * 1024
"""Largest console answer passed on whole, in bytes of JSON; a longer one is cut and marked."""
MAX_COMPLETION_VALUES = 100
"""Completion values passed on (the spec's own maximum per response)."""
_METHOD = re.compile(r"[A-Za-z0-9_.$/:-]{1,200}")
_REFUSED_METHODS = frozenset({"initialize"})


def console_methods(capabilities: Mapping[str, Any] | None) -> list[str]:
    """The request methods a server's declared capabilities allow, for the console's picker (R-12.1).

    `ping` always; `tools/*` with `tools`; `prompts/*` with `prompts`; `resources/*` with
    `resources` (`subscribe`/`unsubscribe` only when it declares `subscribe`); `completion/complete`
    with `completions`; `logging/setLevel` with `logging`.
    """
    caps = capabilities or {}
    methods = ["ping"]
    if caps.get("tools") is not None:
        methods += ["tools/list", "tools/call"]
    if caps.get("prompts") is not None:
        methods += ["prompts/list", "prompts/get"]
    resources = caps.get("resources")
    if resources is not None:
        methods += ["resources/list", "resources/templates/list", "resources/read"]
        if isinstance(resources, dict) and cast(dict[str, Any], resources).get("subscribe"):
            methods += ["resources/subscribe", "resources/unsubscribe"]
    if caps.get("completions") is not None:
        methods.append("completion/complete")
    if caps.get("logging") is not None:
        methods.append("logging/setLevel")
    return methods


@dataclass(frozen=True)
class ServerInfo:
    """What the server said about itself in `initialize`, and what the host chose for it (R-12.1).

    Attributes:
        name / version / title: The server's `serverInfo` (`title` may be None).
        protocol_version: The negotiated protocol version (e.g. `2025-11-25`).
        capabilities: The server's declared capabilities, as it sent them (JSON).
        instructions: The server's `instructions` text, or None (untrusted text).
        methods: Requests these capabilities allow (`console_methods`).
        log_level: The level chosen with `logging/setLevel` (None: never set, the server's default).
        connection_id: The live connection this describes (R-3.5).
    """

    server_id: str
    connection_id: str
    name: str | None
    version: str | None
    title: str | None
    protocol_version: str | None
    capabilities: dict[str, Any]
    instructions: str | None
    methods: list[str]
    log_level: str | None

    def to_dict(self) -> dict[str, Any]:
        """JSON shape for the API."""
        return {
            "server_id": self.server_id,
            "connection_id": self.connection_id,
            "server_info": {"name": self.name, "version": self.version, "title": self.title},
            "protocol_version": self.protocol_version,
            "capabilities": self.capabilities,
            "instructions": self.instructions,
            "methods": self.methods,
            "log_level": self.log_level,
            "log_levels": list(LOG_LEVELS),
        }


@dataclass(frozen=True)
class ConsoleExchange:
    """One request sent from the console and what came back (R-12.1).

    Attributes:
        request: `{"method", "params"}` as sent.
        result / error: The JSON-RPC `result` or `error` (exactly one is set); a result over
            `MAX_ANSWER_BYTES` is replaced by the start of its JSON text and `truncated` is True.
        elapsed_ms: From sending to the answer, in milliseconds.
        at: When it was sent (aware UTC).
    """

    server_id: str
    request: dict[str, Any]
    result: Any
    error: dict[str, Any] | None
    elapsed_ms: float
    connection_id: str
    at: datetime = field(default_factory=lambda: datetime.now(UTC))
    truncated: bool = False

    def to_dict(self) -> dict[str, Any]:
        """JSON shape for the API: `{"request", "response": {"result"|"error"}, "elapsed_ms", ...}`."""
        response: dict[str, Any] = {"error": self.error} if self.error is not None else {"result": self.result}
        return {
            "server_id": self.server_id,
            "request": self.request,
            "response": response,
            "elapsed_ms": self.elapsed_ms,
            "connection_id": self.connection_id,
            "at": self.at.isoformat(),
            "truncated": self.truncated,
        }


@dataclass(frozen=True)
class Completion:
    """Suggestions for one argument (`completion/complete`, R-12.1): at most `MAX_COMPLETION_VALUES`."""

    values: list[str]
    total: int | None
    has_more: bool

    def to_dict(self) -> dict[str, Any]:
        """JSON shape for the API: `{"values", "total", "has_more"}`."""
        return {"values": self.values, "total": self.total, "has_more": self.has_more}


def _invalid(field_name: str, code: str, message: str) -> RequestInvalid:
    return RequestInvalid(
        f"{field_name}: {message}", details={"errors": [FieldError(field_name, code, message).to_dict()]}
    )


def _bounded(result: Any) -> tuple[Any, bool]:
    text = json.dumps(result, ensure_ascii=False, default=str)
    encoded = text.encode("utf-8", "replace")
    if len(encoded) <= MAX_ANSWER_BYTES:
        return result, False
    return encoded[:MAX_ANSWER_BYTES].decode("utf-8", "ignore"), True


class Debugger:
    """Debugging use cases of the host's servers; `McpCenter.debugger` (R-12.1).

    Args:
        manager: The connection manager (live sessions, activity).
        runnable: Returns the server's record, or raises why it cannot run now (not found,
            disabled, not trusted, not tested).
        exists: Raises ServerNotFound for an unknown id (reading the activity of a stopped server
            is fine).
    """

    def __init__(
        self,
        manager: ConnectionManager,
        runnable: Callable[[str], Awaitable[ServerRecord]],
        exists: Callable[[str], Awaitable[object]],
    ) -> None:
        self._manager = manager
        self._runnable = runnable
        self._exists = exists

    async def info(self, server_id: str) -> ServerInfo:
        """Server info of the live session (connecting lazily, R-3.2).

        Raises:
            ServerNotFound, ServerDisabled, ServerNotTrusted, ServerNotTested, connection errors.
        """
        await self._runnable(server_id)
        conn = await self._manager.connect(server_id)
        assert conn.session is not None
        client = conn.session.client
        implementation = client.server_info
        declared = client.server_capabilities
        capabilities = declared.model_dump(mode="json", by_alias=True, exclude_none=True)
        return ServerInfo(
            server_id=server_id,
            connection_id=conn.connection_id,
            name=implementation.name if implementation else None,
            version=implementation.version if implementation else None,
            title=implementation.title if implementation else None,
            protocol_version=client.protocol_version,
            capabilities=capabilities,
            instructions=client.session.instructions,
            methods=console_methods(capabilities),
            log_level=self._manager.logging_level(server_id),
        )

    async def activity(self, server_id: str, *, after: int | None = None) -> list[ActivityEntry]:
        """The server's kept activity entries, oldest first (`seq > after` when given); never connects.

        Returns:
            `runtime.ActivityEntry`s (frozen): `seq`, `at`, `kind` (`log`, `notification` or
            `progress`, a Literal), `method`, and the kind's fields (`level`, `logger`, `data`;
            `params`; `operation_id`, `progress`, `total`, `message`), redacted and bounded;
            `to_dict()` is the REST JSON (R-12.1).
        Raises:
            ServerNotFound.
        """
        await self._exists(server_id)
        return self._manager.activity.entries(server_id, after=after)

    async def clear_activity(self, server_id: str) -> None:
        """Forget the server's kept activity (the page's "Clear").

        Raises:
            ServerNotFound.
        """
        await self._exists(server_id)
        self._manager.activity.clear(server_id)

    async def set_log_level(self, server_id: str, level: object) -> str:
        """`logging/setLevel` on the live session; kept and sent again to each new session (R-12.1).

        Returns:
            The level now set.
        Raises:
            RequestInvalid (not an MCP level), CapabilityNotDeclared (no `logging` capability),
            ServerRequestFailed (the server refused), and the errors of `info`.
        """
        await self._exists(server_id)
        if not isinstance(level, str) or level not in LOG_LEVELS:
            raise _invalid("level", "FIELD_INVALID", "must be one of " + ", ".join(LOG_LEVELS))
        info = await self.info(server_id)
        if "logging" not in info.capabilities:
            raise CapabilityNotDeclared(
                f"server '{server_id}' declares no logging capability; it sends no log messages to set a level for",
                details={"server_id": server_id, "capability": "logging"},
            )
        await self._manager.set_logging_level(server_id, level)
        logger.info("server.log_level_set", extra={"server_id": server_id, "level": level})
        return level

    async def send(
        self, server_id: str, method: object, params: object = None, *, operation_id: str | None = None
    ) -> ConsoleExchange:
        """Send one request from the JSON-RPC console and return the exchange (R-12.1).

        Args:
            method: Any request method but `initialize` (`notifications/*` are not requests).
            params: A JSON object, or None for none.
            operation_id: `POST /api/operations/{id}/cancel` cancels it (`notifications/cancelled`).
        Raises:
            RequestInvalid (method or params malformed, or refused), CallCancelled, ServerTimeout,
            connection errors, and the errors of `info` (ServerNotFound first, before the body is
            checked). A JSON-RPC error the server answers is not raised: it is the exchange's `error`.
        """
        await self._exists(server_id)
        if not isinstance(method, str) or not _METHOD.fullmatch(method):
            raise _invalid("method", "FIELD_INVALID", "must be a JSON-RPC method name such as tools/list")
        if method in _REFUSED_METHODS or method.startswith("notifications/"):
            raise _invalid(
                "method",
                "RPC_METHOD_REFUSED",
                "initialize and notifications cannot be sent from the console: the session is already initialized",
            )
        if params is not None:
            check_json_safe(params, "params")
            if not isinstance(params, dict):
                raise _invalid("params", "FIELD_INVALID", "must be a JSON object (or left out)")
        request_params = cast(dict[str, Any] | None, params)
        await self._runnable(server_id)
        logger.info("server.console_request", extra={"server_id": server_id, "method": method})
        answer = await self._manager.request_raw(server_id, method, request_params, operation_id=operation_id)
        result, truncated = _bounded(answer.result) if answer.error is None else (None, False)
        request: dict[str, Any] = {"method": method}
        if request_params is not None:
            request["params"] = request_params
        return ConsoleExchange(
            server_id=server_id,
            request=request,
            result=result,
            error=answer.error,
            elapsed_ms=answer.elapsed_ms,
            connection_id=answer.connection_id,
            truncated=truncated,
        )

    async def complete(self, server_id: str, body: object) -> Completion:
        """Suggestions for a prompt or resource-template argument (`completion/complete`, R-12.1).

        Args:
            body: `{"ref": {"type": "ref/prompt", "name"} | {"type": "ref/resource", "uri"},
                "argument": {"name", "value"}, "context": {"arguments": {name: value}}?}`.
        Raises:
            RequestInvalid, CapabilityNotDeclared (no `completions`), ServerRequestFailed (the server
            answered an error), ServerProtocolError (a malformed result), and the errors of `info`.
        """
        await self._exists(server_id)
        params = _completion_params(body)
        info = await self.info(server_id)
        if "completions" not in info.capabilities:
            raise CapabilityNotDeclared(
                f"server '{server_id}' declares no completions capability",
                details={"server_id": server_id, "capability": "completions"},
            )
        answer = await self._manager.request_raw(server_id, "completion/complete", params)
        if answer.error is not None:
            raise ServerRequestFailed(
                f"the server answered completion/complete with error {answer.error.get('code')}: "
                f"{str(answer.error.get('message', ''))[:500]}",
                details={"reason": ErrorReason.PROTOCOL.value, "rpc_code": answer.error.get("code")},
            )
        try:
            parsed = types.CompleteResult.model_validate(answer.result, by_name=False)
        except ValidationError:
            raise ServerProtocolError(
                "the server's completion/complete result is not a valid CompleteResult",
                details={"reason": ErrorReason.PROTOCOL.value},
            ) from None
        values = parsed.completion.values[:MAX_COMPLETION_VALUES]
        more = bool(parsed.completion.has_more) or len(parsed.completion.values) > MAX_COMPLETION_VALUES
        return Completion(values=values, total=parsed.completion.total, has_more=more)


def _completion_params(body: object) -> dict[str, Any]:
    """Check a completion body and return the `completion/complete` params."""
    if not isinstance(body, dict):
        raise _invalid("body", "FIELD_INVALID", "must be a JSON object")
    data = cast(dict[str, Any], body)
    ref: object = data.get("ref")
    if not isinstance(ref, dict):
        raise _invalid("ref", "FIELD_REQUIRED", "must be {type: ref/prompt, name} or {type: ref/resource, uri}")
    ref_data = cast(dict[str, Any], ref)
    if ref_data.get("type") == "ref/prompt" and isinstance(ref_data.get("name"), str) and ref_data["name"]:
        out_ref: dict[str, Any] = {"type": "ref/prompt", "name": ref_data["name"]}
    elif ref_data.get("type") == "ref/resource" and isinstance(ref_data.get("uri"), str) and ref_data["uri"]:
        out_ref = {"type": "ref/resource", "uri": ref_data["uri"]}
    else:
        raise _invalid("ref", "FIELD_INVALID", "must be {type: ref/prompt, name} or {type: ref/resource, uri}")
    argument: object = data.get("argument")
    if (
        not isinstance(argument, dict)
        or not isinstance(cast(dict[str, Any], argument).get("name"), str)
        or not isinstance(cast(dict[str, Any], argument).get("value"), str)
    ):
        raise _invalid("argument", "FIELD_INVALID", "must be {name, value} with string values")
    arg = cast(dict[str, str], argument)
    params: dict[str, Any] = {"ref": out_ref, "argument": {"name": arg["name"], "value": arg["value"][:1000]}}
    context: object = data.get("context")
    if context is not None:
        arguments: object = cast(dict[str, Any], context).get("arguments") if isinstance(context, dict) else None
        if not isinstance(arguments, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in cast(dict[object, object], arguments).items()
        ):
            raise _invalid("context.arguments", "FIELD_INVALID", "must be an object of string values")
        params["context"] = {"arguments": dict(cast(dict[str, str], arguments))}
    return params
