"""Prompts and resources for agents: `/server:prompt` commands, `@` resource search, reads (R-5.4, R-5.5, R-8).

What a server returns here is untrusted context: the REST and library views wrap it in delimiters
with provenance (`untrusted.py`); the gateway's MCP-shaped methods pass the server's messages on
unchanged with provenance in `_meta`, and route a request to the server behind an aggregate prompt
name (`{serverId}:{prompt}`) or a scoped URI (`mcp-center+{serverId}:{uri}`, R-8.1, R-8.4).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

import mcp_types as types

from mcp_center.config import ServerConfig
from mcp_center.errors import (
    FieldError,
    PromptNotFound,
    RequestInvalid,
    ResourceNotFound,
    ServerNotFound,
    ServerRequestFailed,
    did_you_mean,
)
from mcp_center.registry import (
    PromptEntry,
    build_prompts,
    build_resources,
    search_resources,
    split_prompt_name,
    template_matches,
)
from mcp_center.runtime import Catalog, Category
from mcp_center.service.agent_registry import (
    DEFAULT_RESOURCE_LIMIT,
    MAX_RESOURCE_LIMIT,
    AgentCatalog,
    check_max_bytes,
    invalid_field,
)
from mcp_center.service.results import ResourceSearch
from mcp_center.service.untrusted import PromptBlock, ResourceBlock, prompt_block, resource_block

__all__ = ["ContextItems"]

MAX_URI_CHARS = 8192
RESOURCE_NOT_FOUND_RPC_CODES = frozenset({-32002, -32602})
"""JSON-RPC errors a server answers `resources/read` with for a resource it does not have: MCP's
"resource not found", and "invalid params", which SDK servers send for an unknown URI (R-5.5)."""


class ContextItems(AgentCatalog):
    """The prompt and resource half of `Capabilities` (REST/library views and the gateway's)."""

    async def _prompt_entries(self) -> list[PromptEntry]:
        await self._connect_lazy()
        state = await self._read()
        return build_prompts((c.id, c.name, cat.items["prompts"]) for c, cat in self._ready(state))

    async def prompts(self) -> list[PromptEntry]:
        """`/server:prompt` commands of every ready server, with their argument definitions (R-5.4)."""
        return await self._prompt_entries()

    async def get_prompt(self, name: str, arguments: object = None, *, max_bytes: object = None) -> PromptBlock:
        """`prompts/get` as an untrusted context block with provenance (R-5.4)."""
        bound = check_max_bytes(max_bytes)
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in cast(dict[object, object], arguments).items()
        ):
            raise invalid_field("arguments", "FIELD_INVALID", "must be an object of string values")
        args = cast(dict[str, str], arguments)
        parts = split_prompt_name(name)
        entry = None
        if parts is not None:
            entry = next(
                (e for e in await self._prompt_entries() if (e.server_id, e.prompt.name) == parts),
                None,
            )
        if entry is None:
            raise PromptNotFound(f"no ready server offers the prompt '{name}'", details={"name": name})
        known = {a.name for a in entry.arguments}
        errors = [
            FieldError(f"arguments.{k}", "FIELD_UNKNOWN", "is not an argument of this prompt")
            for k in args
            if k not in known
        ]
        errors += [
            FieldError(f"arguments.{a.name}", "FIELD_REQUIRED", "is required")
            for a in entry.arguments
            if a.required and a.name not in args
        ]
        if errors:
            raise RequestInvalid(
                f"{errors[0].field}: {errors[0].message}", details={"errors": [e.to_dict() for e in errors]}
            )
        result = await self._manager.get_prompt(entry.server_id, entry.prompt.name, args)
        return prompt_block(
            result,
            name=entry.name,
            server_id=entry.server_id,
            server_name=entry.server_name,
            prompt=entry.prompt.name,
            arguments=args,
            max_bytes=bound,
        )

    # ----- resources -----------------------------------------------------------------------------

    async def resources(self, query: str = "", *, limit: object = None, server_id: str | None = None) -> ResourceSearch:
        """Resources and resource templates of every ready server matching `query` (R-5.5).

        `server_id` keeps only that server's entries (before `limit` applies); an unknown id finds nothing.
        """
        if limit is None:
            limit = DEFAULT_RESOURCE_LIMIT
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_RESOURCE_LIMIT:
            raise invalid_field("limit", "FIELD_INVALID", f"must be an integer from 1 to {MAX_RESOURCE_LIMIT}")
        await self._connect_lazy()
        state = await self._read()
        entries = build_resources(
            (c.id, c.name, cat.items["resources"], cat.items["resource_templates"])
            for c, cat in self._ready(state)
            if server_id is None or c.id == server_id
        )
        found = search_resources(entries, query, limit=limit)
        return ResourceSearch(query=query, resources=tuple(found))

    async def read_resource(self, server_id: object, uri: object, *, max_bytes: object = None) -> ResourceBlock:
        """`resources/read`, wrapped in fresh random delimiters with provenance, size-bounded (R-5.5)."""
        bound = check_max_bytes(max_bytes)
        if not isinstance(server_id, str) or not server_id:
            raise invalid_field("server_id", "FIELD_REQUIRED", "name the server that offers the resource")
        if not isinstance(uri, str) or not uri or len(uri) > MAX_URI_CHARS or any(ord(c) < 32 for c in uri):
            raise invalid_field("uri", "FIELD_INVALID", f"must be a URI of 1-{MAX_URI_CHARS} printable characters")
        state = await self._read()
        record = state.servers.get(server_id)
        if record is None:
            raise ServerNotFound(
                f"no server with id '{server_id}'",
                details={"server_id": server_id, "did_you_mean": did_you_mean(server_id, state.servers)},
            )
        try:
            result = await self._manager.read_resource(server_id, uri)
        except ServerRequestFailed as exc:
            # The server is fine and said the caller named a resource it does not have: a 404 of
            # the caller's, not a 502 of the server's (found by schemathesis, issue 16).
            rpc_code = exc.details.get("rpc_code")
            if rpc_code not in RESOURCE_NOT_FOUND_RPC_CODES:
                raise
            raise ResourceNotFound(
                f"server '{server_id}' has no resource '{uri}' ({exc.message})",
                details={"server_id": server_id, "uri": uri, "rpc_code": rpc_code},
            ) from None
        contents = list(result.contents)
        return resource_block(contents, server_id=server_id, server_name=record.config.name, uri=uri, max_bytes=bound)

    # ----- the gateway's view, as MCP types (R-8.1) ------------------------------------------------

    async def mcp_prompts(self) -> list[types.Prompt]:
        """Every ready server's prompts as MCP `Prompt`s named `{serverId}:{prompt}` (R-5.4)."""
        return [entry.prompt.model_copy(update={"name": entry.name}) for entry in await self._prompt_entries()]

    async def mcp_get_prompt(self, name: str, arguments: Mapping[str, str] | None) -> types.GetPromptResult:
        """`prompts/get` of `{serverId}:{prompt}`, the server's messages unchanged, provenance in `_meta`.

        Raises:
            PromptNotFound: no ready server offers it.
        """
        parts = split_prompt_name(name)
        entry = None
        if parts is not None:
            entry = next((e for e in await self._prompt_entries() if (e.server_id, e.prompt.name) == parts), None)
        if entry is None:
            raise PromptNotFound(f"no ready server offers the prompt '{name}'", details={"name": name})
        result = await self._manager.get_prompt(entry.server_id, entry.prompt.name, dict(arguments or {}))
        meta = dict(result.meta or {})
        meta["mcp-center/provenance"] = {"server_id": entry.server_id, "prompt": entry.prompt.name, "untrusted": True}
        return result.model_copy(update={"meta": meta})

    async def mcp_resources(self) -> tuple[list[types.Resource], list[types.ResourceTemplate]]:
        """Every ready server's resources and resource templates (R-5.5).

        A URI (or URI template) offered by two servers is exposed once per server as
        `mcp-center+{serverId}:{uri}` so each read reaches the server that listed it; other URIs are
        exposed unchanged.
        """
        await self._connect_lazy()
        state = await self._read()
        ready = self._ready(state)
        counts: dict[str, int] = {}
        template_counts: dict[str, int] = {}
        for _config, catalog in ready:
            for resource in catalog.items["resources"]:
                counts[resource.uri] = counts.get(resource.uri, 0) + 1
            for template in catalog.items["resource_templates"]:
                template_counts[template.uri_template] = template_counts.get(template.uri_template, 0) + 1
        resources: list[types.Resource] = []
        templates: list[types.ResourceTemplate] = []
        for config, catalog in ready:
            for resource in catalog.items["resources"]:
                uri = resource.uri if counts[resource.uri] == 1 else _scoped_uri(config.id, resource.uri)
                resources.append(resource.model_copy(update={"uri": uri}))
            for template in catalog.items["resource_templates"]:
                # A template two servers offer would match the same URIs on both: scope it like a URI.
                scoped = template_counts[template.uri_template] > 1
                uri_template = _scoped_uri(config.id, template.uri_template) if scoped else template.uri_template
                templates.append(template.model_copy(update={"uri_template": uri_template}))
        return resources, templates

    # ----- the gateway's lean path: JSON in, JSON out (R-8.1, R-8.3, R-8.4) ----------------------

    async def mcp_read_resource(self, uri: str) -> types.ReadResourceResult:
        """`resources/read` routed to the server that offers `uri` (listed, scoped, or matching a template).

        Raises:
            RequestInvalid: no ready server offers that URI.
        """
        state = await self._read()
        server_id, server_uri = self._route_uri(uri, {c.id: (c, cat) for c, cat in self._ready(state)})
        return await self._manager.read_resource(server_id, server_uri)

    # ----- the gateway's lean path: JSON in, JSON out (R-8.1, R-8.3, R-8.4) ----------------------

    async def server_exists(self, server_id: str) -> bool:
        """True when a server with this id is registered (enabled or not)."""
        return server_id in (await self._read()).servers

    async def server_ids(self) -> list[str]:
        """The ids of every registered server (enabled or not), sorted: the endpoints `/mcp/{id}` has."""
        return sorted((await self._read()).servers)

    async def gateway_listing(self, category: Category, server_id: str | None = None) -> list[dict[str, Any]]:
        """Prompts, resources or resource templates as JSON: the aggregate view (`{serverId}:{prompt}`,
        scoped URIs), or one server's items under their own names (R-8.4)."""
        if server_id is None:
            if category == "prompts":
                items: list[Any] = await self.mcp_prompts()
            else:
                resources, templates = await self.mcp_resources()
                items = resources if category == "resources" else templates
        else:
            await self._connect_lazy()
            state = await self._read()
            found = [cat for c, cat in self._ready(state) if c.id == server_id]
            items = list(found[0].items[category]) if found else []
        return [item.model_dump(mode="json", by_alias=True, exclude_none=True) for item in items]

    async def forward_request(
        self, method: str, params: Mapping[str, Any], *, server_id: str | None = None
    ) -> dict[str, Any]:
        """A request other than `tools/call`, routed to the server it names and sent as it came (R-8.1).

        `prompts/get`, `resources/read`, `resources/subscribe`, `resources/unsubscribe` and
        `completion/complete` go to the server behind the prompt name or URI (aggregate names and
        scoped URIs are mapped back), or with `server_id` to that server under its own names (R-8.4);
        `logging/setLevel` goes to that server (the aggregate endpoint only acknowledges it).

        A subscription (`resources/subscribe`, `resources/unsubscribe`) is to a resource the server
        offers, listed or matched by one of its templates, on every endpoint: else RESOURCE_UNKNOWN
        (-32602 at the gateway, the code MCP gives "resource not found", SEP-2164), never forwarded.

        Raises:
            RequestInvalid: no ready server offers the prompt or URI (field error RESOURCE_UNKNOWN).
            PromptNotFound: an aggregate prompt name no ready server offers.
            ServerRequestFailed: the server's JSON-RPC error (`rpc_error`).
        """
        state = await self._read()
        ready = {c.id: (c, cat) for c, cat in self._ready(state)}
        out = dict(params)
        if server_id is not None:
            if server_id not in ready:
                raise ServerNotFound(f"server '{server_id}' is not enabled and ready", details={"server_id": server_id})
            target = server_id
        elif method == "logging/setLevel":
            return {}
        elif method == "prompts/get":
            target, out["name"] = self._route_prompt(str(params.get("name", "")), ready)
        elif method == "completion/complete":
            ref = dict(cast(Mapping[str, Any], params.get("ref") or {}))
            if ref.get("type") == "ref/prompt":
                target, ref["name"] = self._route_prompt(str(ref.get("name", "")), ready)
            else:
                target, ref["uri"] = self._route_uri(str(ref.get("uri", "")), ready, template=True)
            out["ref"] = ref
        else:
            target, out["uri"] = self._route_uri(str(params.get("uri", "")), ready)
        if method in _SUBSCRIPTIONS and not _offers(ready[target][1], str(out.get("uri", ""))):
            # On `/mcp/{id}` and for a scoped URI on `/mcp` alike: a subscription is to a resource the
            # server offers (listed, or matched by one of its templates), as `/mcp` routes a plain URI.
            raise invalid_field("uri", "RESOURCE_UNKNOWN", "the server does not offer this URI")
        result = await self._manager.forward(target, method, out)
        if method == "prompts/get":
            meta = dict(result.get("_meta") or {})
            meta["mcp-center/provenance"] = {"server_id": target, "prompt": out["name"], "untrusted": True}
            result = {**result, "_meta": meta}
        return result

    @staticmethod
    def _route_prompt(name: str, ready: Mapping[str, tuple[ServerConfig, Catalog]]) -> tuple[str, str]:
        parts = split_prompt_name(name)
        if parts is not None and parts[0] in ready:
            server_id, prompt = parts
            if any(p.name == prompt for p in ready[server_id][1].items["prompts"]):
                return server_id, prompt
        raise PromptNotFound(f"no ready server offers the prompt '{name}'", details={"name": name})

    @staticmethod
    def _route_uri(
        uri: str, ready: Mapping[str, tuple[ServerConfig, Catalog]], *, template: bool = False
    ) -> tuple[str, str]:
        """The server that offers `uri` (scoped, listed, or matched by one of its templates) and the URI
        it knows; with `template`, `uri` is a URI template itself (completion of its arguments)."""
        server_id, server_uri = _unscope_uri(uri)
        if server_id is None:
            if template:
                candidates = [
                    sid
                    for sid, (_c, cat) in ready.items()
                    if any(t.uri_template == uri for t in cat.items["resource_templates"])
                ]
            else:
                listed = [sid for sid, (_c, cat) in ready.items() if any(r.uri == uri for r in cat.items["resources"])]
                candidates = listed or [
                    sid
                    for sid, (_c, cat) in ready.items()
                    if any(template_matches(t.uri_template, uri) for t in cat.items["resource_templates"])
                ]
            server_id = candidates[0] if len(candidates) == 1 else None
        if server_id is None or server_id not in ready:
            raise invalid_field("uri", "RESOURCE_UNKNOWN", "no ready server (or more than one) offers this URI")
        return server_id, server_uri


_SUBSCRIPTIONS = frozenset({"resources/subscribe", "resources/unsubscribe"})


def _offers(catalog: Catalog, uri: str) -> bool:
    """True when `catalog` lists the resource `uri` or one of its templates matches it (RFC 6570)."""
    return any(r.uri == uri for r in catalog.items["resources"]) or any(
        template_matches(t.uri_template, uri) for t in catalog.items["resource_templates"]
    )


_SCOPED_PREFIX = "mcp-center+"


def _scoped_uri(server_id: str, uri: str) -> str:
    return f"{_SCOPED_PREFIX}{server_id}:{uri}"


def _unscope_uri(uri: str) -> tuple[str | None, str]:
    if not uri.startswith(_SCOPED_PREFIX):
        return None, uri
    server_id, sep, rest = uri.removeprefix(_SCOPED_PREFIX).partition(":")
    return (server_id, rest) if sep and server_id else (None, uri)
