"""A tool's JSON Schemas, checked before agents see them and its structured results checked against them.

Threat: one hostile or careless tool definition sinking the whole server, or reaching an agent in a
shape its LLM provider or MCP client refuses. The SDK validates a `tools/list` page as a whole, so a
single `inputSchema: {"type": "string"}` used to fail the page, the first catalog, the test and the
server (issue 14, item 1); and a client validates `structuredContent` against an `outputSchema`
that may itself be broken. `check_tool` looks at one tool definition and either keeps it (possibly
normalised), or says why it must be quarantined. `output_problem` checks a structured result.

Rules (our policy; MCP 2025-11-25 server/tools says `inputSchema` and `outputSchema` are JSON Schema
objects whose `type` is `"object"`, JSON Schema 2020-12 unless `$schema` says otherwise):

- `inputSchema` that is not an object, whose `type` is not `"object"`, that allows non-object
  arguments (a top-level `anyOf`/`oneOf` branch of another type), or that is not valid JSON Schema
  (checked against its metaschema) → the tool is quarantined with the reason.
- Normalisations that change nothing an agent can send (tool arguments are always a JSON object):
  a missing `type` becomes `"object"` when every top-level `anyOf`/`oneOf` branch is an object schema
  (or there are none); a `type` list that contains `"object"` becomes `"object"`; a name listed in
  `required` but missing from `properties` gets an unconstrained property `{}` (unless
  `additionalProperties` is `false`: then no arguments can satisfy the schema and the tool is
  quarantined). Each change is recorded, so the catalog shows it.
- An `outputSchema` that breaks the same rules is removed (the tool stays usable; its results are
  then passed on without a schema), never passed on as is.

Pure functions, no I/O: remote `$ref`s are never fetched (an empty `referencing.Registry`).
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, cast

from mcp_center.models import is_object

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError
    from jsonschema.protocols import Validator

# jsonschema and referencing are imported by the functions that check a schema: a serve or CLI
# process that never lists a tool does not load them (~65 ms CPU of every process, issue 16).

__all__ = ["MAX_REASON_CHARS", "MAX_SCHEMA_DEPTH", "ToolCheck", "check_tool", "output_problem"]

MAX_REASON_CHARS: Final = 300
"""Reasons and problems are cut to this many characters (they are shown in lists and logs)."""
_COMPILED_LIMIT: Final = 256
"""Compiled output-schema validators kept (compiling costs far more than validating)."""
_COMBINATORS: Final = ("anyOf", "oneOf")
MAX_SCHEMA_DEPTH: Final = 128
"""Deeper schemas are refused before any recursive step (copying, metaschema checks) could overflow."""


@dataclass(frozen=True)
class ToolCheck:
    """The verdict on one tool definition.

    Attributes:
        tool: The definition to keep (a normalised copy when `changes` is not empty), or None when
            the tool must be quarantined.
        reason: Why it is quarantined (`<path>: <what is wrong>`), or None.
        changes: What was normalised, one sentence each (input schema fixes, a removed outputSchema).
    """

    tool: dict[str, Any] | None
    reason: str | None = None
    changes: tuple[str, ...] = field(default=())


def _cut(text: str) -> str:
    return text if len(text) <= MAX_REASON_CHARS else text[: MAX_REASON_CHARS - 1] + "…"


def _type_names(value: object) -> list[str] | None:
    """The `type` keyword as a list of names, or None when it is not a string or a list of strings."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in cast(list[object], value)):
        return cast(list[str], value)
    return None


def _object_schema(schema: dict[str, Any], where: str, changes: list[str]) -> str | None:
    """Make `schema` (a copy we own) a `type: object` schema in place; return why it cannot be one."""
    declared = schema.get("type")
    if declared is None:
        for keyword in _COMBINATORS:
            branches: object = schema.get(keyword)
            if not isinstance(branches, list):
                continue
            for number, branch in enumerate(cast(list[object], branches)):
                if not isinstance(branch, dict):
                    continue
                names = _type_names(cast(dict[str, Any], branch).get("type"))
                if names is not None and "object" not in names:
                    return (
                        f"{where}.{keyword}[{number}]: allows {'/'.join(names)} arguments; "
                        "tool arguments are a JSON object"
                    )
        schema["type"] = "object"
        changes.append(f'{where}: added "type": "object" (tool arguments are always a JSON object)')
        return None
    names = _type_names(declared)
    if names == ["object"]:
        return None
    if names is not None and "object" in names:
        schema["type"] = "object"
        changes.append(f'{where}.type: {json.dumps(names)} narrowed to "object" (tool arguments are a JSON object)')
        return None
    shown = json.dumps(declared)[:60]
    return f'{where}.type: must be "object" (tool arguments are a JSON object), not {shown}'


_checked: OrderedDict[tuple[str, str], tuple[dict[str, Any], str | None]] = OrderedDict()
"""(where, schema JSON) -> (the first schema of that text, its verdict): see `_metaschema_problem`."""


def _metaschema_problem(schema: dict[str, Any], where: str) -> tuple[dict[str, Any], str | None]:
    """`(schema to keep, why it is not valid JSON Schema or None)`, checked against its `$schema`
    draft (2020-12 by default).

    Verdicts are remembered for the last `_COMPILED_LIMIT` schemas, with the first schema of each
    text: servers repeat the same small schemas across thousands of tools, and checking costs far
    more than serialising. An equal schema (the same JSON text, members in the same order) is kept
    as that first object, so a catalog holds each distinct schema's nested objects once (R-8.3:
    idle memory; nothing mutates a checked schema, `_object_schema` changes a copy's top level).
    """
    try:
        key = (where, json.dumps(schema, default=str))
    except (TypeError, ValueError, RecursionError):
        return schema, _check_metaschema(schema, where)
    seen = _checked.get(key)
    if seen is not None:
        _checked.move_to_end(key)
        return seen
    problem = _check_metaschema(schema, where)
    _checked[key] = (schema, problem)
    while len(_checked) > _COMPILED_LIMIT:
        _checked.popitem(last=False)
    return schema, problem


def _check_metaschema(schema: dict[str, Any], where: str) -> str | None:
    from jsonschema import Draft202012Validator, SchemaError  # lazily: see the imports
    from jsonschema.validators import validator_for

    try:
        validator_cls = validator_for(schema, default=Draft202012Validator)
        validator_cls.check_schema(schema)
    except SchemaError as exc:
        path = ".".join(str(p) for p in exc.path)
        return f"{where}{'.' + path if path else ''}: not valid JSON Schema: {exc.message}"
    except RecursionError:
        return f"{where}: nested too deeply to check"
    except Exception as exc:  # noqa: BLE001 - whatever the checker trips on, the schema is not usable
        return f"{where}: cannot be checked as JSON Schema ({type(exc).__name__})"
    return None


def _too_deep(value: object, limit: int = MAX_SCHEMA_DEPTH) -> bool:
    """Whether `value` nests objects/arrays more than `limit` levels (iterative: no recursion)."""
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        current, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(current, dict):
            stack.extend((v, depth + 1) for v in cast(dict[str, Any], current).values())
        elif isinstance(current, list):
            stack.extend((v, depth + 1) for v in cast(list[Any], current))
    return False


def _input_schema(raw: object, changes: list[str]) -> tuple[dict[str, Any] | None, str | None]:
    if not is_object(raw):
        return None, "inputSchema: must be a JSON Schema object"
    if _too_deep(raw):
        return None, f"inputSchema: nested more than {MAX_SCHEMA_DEPTH} levels deep"
    schema = dict(cast(dict[str, Any], raw))  # a copy of the top level: the only level changed here
    problem = _object_schema(schema, "inputSchema", changes)
    if problem is not None:
        return None, problem
    required: object = schema.get("required")
    properties: object = schema.get("properties", {})
    if isinstance(required, list) and isinstance(properties, dict):
        defined = cast(dict[str, Any], properties)
        missing = [name for name in cast(list[object], required) if isinstance(name, str) and name not in defined]
        if missing and schema.get("additionalProperties") is False:
            return None, (
                f"inputSchema.required: names {', '.join(missing)[:100]}, which properties does not define, and "
                "additionalProperties is false: no arguments can satisfy it"
            )
        if missing:
            schema["properties"] = {**defined, **{name: {} for name in missing}}
            changes.append(
                f"inputSchema.properties: added {', '.join(missing)[:100]} (listed in required but not defined)"
            )
    schema, problem = _metaschema_problem(schema, "inputSchema")
    return (None, problem) if problem is not None else (schema, None)


def _output_schema(raw: object, changes: list[str]) -> dict[str, Any] | None:
    """The output schema to keep, or None (removed, with the reason in `changes`)."""
    if not is_object(raw):
        changes.append("outputSchema: removed, it is not a JSON Schema object")
        return None
    if _too_deep(raw):
        changes.append(f"outputSchema: removed, nested more than {MAX_SCHEMA_DEPTH} levels deep")
        return None
    schema = dict(cast(dict[str, Any], raw))  # a copy of the top level: the only level changed here
    own: list[str] = []
    problem = _object_schema(schema, "outputSchema", own)
    if problem is None:
        schema, problem = _metaschema_problem(schema, "outputSchema")
    if problem is not None:
        changes.append(f"outputSchema: removed ({problem})")
        return None
    changes.extend(own)
    return schema


def check_tool(item: Mapping[str, Any]) -> ToolCheck:
    """Check and normalise one tool definition as a server sent it (a JSON object).

    Args:
        item: The raw tool object from a `tools/list` page.
    Returns:
        A `ToolCheck`: the definition to keep (normalised copy when anything changed), or the reason
        it is quarantined. Only `inputSchema` and `outputSchema` are looked at here; the caller
        validates the rest against the protocol's models.
    Spec: MCP 2025-11-25 server/tools ("Tool" data type); the normalisation rules are our policy (see
        the module docstring) and are stated in docs/agents.md.
    """
    changes: list[str] = []
    input_schema, problem = _input_schema(item.get("inputSchema"), changes)
    if input_schema is None:
        return ToolCheck(None, _cut(problem or "inputSchema: not usable"))
    tool = dict(item)
    tool["inputSchema"] = input_schema  # equal to the server's (but for `changes`), maybe shared
    if "outputSchema" in item and item["outputSchema"] is not None:
        output_schema = _output_schema(item["outputSchema"], changes)
        if output_schema is None:
            del tool["outputSchema"]
        else:
            tool["outputSchema"] = output_schema
    return ToolCheck(tool, None, tuple(_cut(c) for c in changes))


_compiled: OrderedDict[str, Validator] = OrderedDict()


def _validator(schema: dict[str, Any]) -> Validator:
    from jsonschema import Draft202012Validator  # lazily: see the imports
    from jsonschema.validators import validator_for
    from referencing import Registry

    key = hashlib.sha256(json.dumps(schema, sort_keys=True, default=str).encode()).hexdigest()
    found = _compiled.get(key)
    if found is not None:
        _compiled.move_to_end(key)
        return found
    validator_cls = validator_for(schema, default=Draft202012Validator)
    validator_cls.check_schema(schema)
    validator = validator_cls(schema, registry=Registry())
    _compiled[key] = validator
    while len(_compiled) > _COMPILED_LIMIT:
        _compiled.popitem(last=False)
    return validator


_by_identity: OrderedDict[int, tuple[Mapping[str, Any], Validator]] = OrderedDict()
"""The compiled validator of each recently checked schema object (id → the object, its validator)."""


def _validator_of(schema: Mapping[str, Any]) -> Validator:
    """`_validator` of `schema`, found by the object itself first: a tool's outputSchema is the same
    object for every result of that tool, so a call costs a lookup instead of serialising and hashing
    its schema (the gateway checks every forwarded result, R-3.9, R-8.3). The entry holds the
    object, so its id cannot be reused while it is remembered."""
    key = id(schema)
    found = _by_identity.get(key)
    if found is not None and found[0] is schema:
        _by_identity.move_to_end(key)
        return found[1]
    validator = _validator(dict(schema))
    _by_identity[key] = (schema, validator)
    while len(_by_identity) > _COMPILED_LIMIT:
        _by_identity.popitem(last=False)
    return validator


def output_problem(schema: Mapping[str, Any], structured: object) -> str | None:
    """Why `structured` (a result's `structuredContent`, None when absent) breaks `schema`, else None.

    Args:
        schema: The tool's `outputSchema` as listed (checked by `check_tool`).
        structured: The `structuredContent` of a result that is not an error.
    Returns:
        None when it conforms; else one sentence naming the path and the broken rule (at most
        `MAX_REASON_CHARS` characters). A `$ref` that does not resolve inside the schema, or a schema
        that cannot be compiled, is reported as a problem too (the result cannot be checked).
    Spec: MCP 2025-11-25 server/tools "Output Schema": servers MUST return conforming structured results,
        clients SHOULD validate them.
    """
    from jsonschema import SchemaError  # lazily: see the imports
    from jsonschema.exceptions import best_match  # pyright: ignore[reportUnknownVariableType]
    from referencing.exceptions import Unresolvable

    if structured is None:
        return "the tool declares an outputSchema but returned no structuredContent"
    try:
        validator = _validator_of(schema)
        error = cast("ValidationError | None", best_match(validator.iter_errors(cast(Any, structured))))
    except Unresolvable as exc:
        return _cut(f"the outputSchema has a $ref that does not resolve ({exc})")
    except SchemaError as exc:
        return _cut(f"the outputSchema is not valid JSON Schema: {exc.message}")
    except RecursionError:
        return "the structuredContent or the outputSchema is nested too deeply to check"
    if error is None:
        return None
    path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
    return _cut(f"structuredContent{path}: {error.message}")
