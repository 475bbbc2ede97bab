"""What an import plan holds: its servers, secrets, variables and rejected entries, and how supplied
values complete it (R-1.8).

Pure data built by `interchange.plan` (`plan_import`, `plan_document`), which holds the reading and
the decisions; `ImportPlan.preview()` is the JSON the user confirms and `ImportPlan.resolve()` fills
the variables with the values the user supplied and returns create bodies for `McpCenter`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from mcp_center.config import parse_server_config
from mcp_center.errors import ConfigInvalid, FieldError, ImportValuesInvalid
from mcp_center.interchange.display import REDACTED_VALUE
from mcp_center.interchange.variables import Reference, substitute
from mcp_center.models import is_array

__all__ = [
    "MAX_VALUE_CHARS",
    "ON_CONFLICT",
    "ExistingEntry",
    "ImportPlan",
    "Occurrence",
    "PlannedServer",
    "RejectedEntry",
    "SecretCheck",
    "SecretKindName",
    "SecretSlot",
    "VariableInfo",
    "map_strings",
    "no_check",
]

SecretCheck = Callable[[str, str, bool], None]
"""`check(field, value, is_header)`: raises ConfigInvalid when `value` cannot be stored as a secret
(the service passes its `parse_secret_value` rule: at least 6 characters, at most 32 KiB)."""

MAX_VALUE_CHARS = 32 * 1024
"""Longest value a user may supply for one variable (characters)."""

SecretKindName = Literal["env", "header", "bearer"]

ON_CONFLICT = ("refuse", "skip", "rename")
"""What an import does with an entry an existing server already has (by name), when it
differs: `refuse` (the default: apply is refused, IMPORT_CONFLICT), `skip` it, or `rename` (create
it again under a `-2` id). An identical one is always `unchanged` and skipped."""


def no_check(_field: str, _value: str, _header: bool) -> None:
    return None


@dataclass(frozen=True)
class SecretSlot:
    """A value that becomes a secret: env var, header, or the bearer token.

    `template` is the literal from the file or a text with `${...}` references; "" means the
    file left it empty (declared, no value). `field` is where it sits in the entry.
    """

    kind: SecretKindName
    key: str
    field: str
    template: str
    has_references: bool

    @property
    def value_source(self) -> str:
        """`file`, `variables` or `not_set`: where the secret's value will come from."""
        if self.has_references:
            return "variables"
        return "file" if self.template else "not_set"

    def __repr__(self) -> str:  # the template may be a literal secret
        return f"SecretSlot({self.kind!r}, {self.key!r}, {self.value_source!r})"


@dataclass(frozen=True)
class Occurrence:
    """One `${...}` in an accepted entry: the field it sits in and whether that field is secret."""

    field: str
    reference: Reference
    secret_field: bool


@dataclass(frozen=True)
class PlannedServer:
    """An entry that will be created: proposed id, the create body without secret values, its secrets."""

    id: str
    name: str
    source: str
    slug: str
    clash: str | None
    """`existing` or `file` when `slug` was taken and `id` is the suffixed resolution, else None."""
    transport: str
    config: dict[str, Any]
    """The create body without secret values; plain strings may still hold `${...}`."""
    secrets: tuple[SecretSlot, ...]
    occurrences: tuple[Occurrence, ...]
    warnings: tuple[FieldError, ...]
    unusable_defaults: frozenset[str] = frozenset()
    """Variables whose file default would make one of this server's secrets invalid (DEFAULT_UNUSABLE)."""

    def preview(self) -> dict[str, Any]:
        """JSON shape of this server in the preview (no secret value)."""
        names: list[str] = []
        for occurrence in self.occurrences:
            if occurrence.reference.name not in names:
                names.append(occurrence.reference.name)
        return {
            "id": self.id,
            "name": self.name,
            "source": self.source,
            "clash": None if self.clash is None else {"with": self.clash, "slug": self.slug},
            "transport": self.transport,
            "config": self._shown_config(),
            "secrets": [{"kind": s.kind, "key": s.key, "value": s.value_source} for s in self.secrets],
            "variables": names,
            "warnings": [w.to_dict() for w in self.warnings],
        }

    def _shown_config(self) -> dict[str, Any]:
        """`config` as the preview shows it: each argument flagged CREDENTIAL_IN_ARGS is
        `REDACTED_VALUE` (break36, R-1.5); the server is still created with the file's arguments."""
        flagged = {w.field.removeprefix("args.") for w in self.warnings if w.code == "CREDENTIAL_IN_ARGS"}
        args: object = self.config.get("args")
        if not flagged or not is_array(args):
            return self.config
        return {**self.config, "args": [REDACTED_VALUE if str(i) in flagged else arg for i, arg in enumerate(args)]}


@dataclass(frozen=True)
class ExistingEntry:
    """An entry an existing server already has (the same name), not created again.

    `outcome`: `unchanged` (same definition), `skipped` (differs; `on_conflict=skip`) or
    `conflict` (differs; `on_conflict=refuse`: apply refuses the import). `fields`: the top-level
    fields that differ (none when unchanged).
    """

    name: str
    source: str
    server_id: str
    outcome: Literal["unchanged", "skipped", "conflict"]
    fields: tuple[str, ...] = ()
    variables: tuple[str, ...] = ()
    """The `${...}` names the entry uses: given for it, they are not unknown, only unused."""
    secrets_not_updated: tuple[tuple[SecretKindName, str], ...] = ()
    """`(kind, key)` of the secrets the entry gives a value for: secret values are write-only and
    never compared, so the stored ones stay; `mcp-center secret set` changes them."""

    def preview(self) -> dict[str, Any]:
        """JSON shape of this entry in the preview: `{name, source, server_id, outcome, fields, variables,
        secrets_not_updated: [{kind: env|header|bearer, key}]}`."""
        return {
            "name": self.name,
            "source": self.source,
            "server_id": self.server_id,
            "outcome": self.outcome,
            "fields": list(self.fields),
            "variables": list(self.variables),
            "secrets_not_updated": [{"kind": kind, "key": key} for kind, key in self.secrets_not_updated],
        }


@dataclass(frozen=True)
class RejectedEntry:
    """An entry that will not be created, and why (entry-relative fields, stable codes)."""

    name: str
    source: str
    errors: tuple[FieldError, ...]

    def preview(self) -> dict[str, Any]:
        """JSON shape of this entry in the preview."""
        return {"name": self.name, "source": self.source, "errors": [e.to_dict() for e in self.errors]}


@dataclass(frozen=True)
class VariableInfo:
    """A value the user must supply (R-1.8), never taken from the host environment.

    `secret` asks for hidden input: the variable sits in a header or a secret env var, its name
    looks like a credential, or it is a VS Code `password` input. `default` is offered only when
    every occurrence carries the same one and it makes a valid secret wherever it fills one
    (`default_unusable` otherwise), and shown only for non-secret variables.
    """

    name: str
    kind: str
    secret: bool
    has_default: bool
    default: str | None
    description: str | None
    used_in: tuple[tuple[str, str], ...]
    default_unusable: bool = False

    def preview(self) -> dict[str, Any]:
        """JSON shape of this variable in the preview."""
        return {
            "name": self.name,
            "kind": self.kind,
            "secret": self.secret,
            "has_default": self.has_default,
            "default": None if self.secret else self.default,
            "description": self.description,
            "used_in": [{"server": server, "field": f} for server, f in self.used_in],
        }


@dataclass(frozen=True)
class ImportPlan:
    """What an import would create. Built by `plan_import`; pure data, no store."""

    format: str
    servers: tuple[PlannedServer, ...]
    variables: tuple[VariableInfo, ...]
    rejected: tuple[RejectedEntry, ...]
    input_defaults: Mapping[str, str] = field(default_factory=dict[str, str])
    existing: tuple[ExistingEntry, ...] = ()
    """Entries existing servers already have (see `ON_CONFLICT`); not in `preview()`, which the
    service completes with them (`existing`, `on_conflict`)."""

    @property
    def conflicts(self) -> tuple[ExistingEntry, ...]:
        """The existing entries that refuse the import (`outcome == "conflict"`)."""
        return tuple(e for e in self.existing if e.outcome == "conflict")

    def preview(self) -> dict[str, Any]:
        """The preview body (without token and digest, which the service adds).

        Shape: `{"format", "servers": [{id, name, source, clash, transport, config, secrets,
        variables, warnings}], "variables": [{name, kind, secret, has_default, default,
        description, used_in}], "rejected": [{name, source, errors}]}`.
        """
        return {
            "format": self.format,
            "servers": [s.preview() for s in self.servers],
            "variables": [v.preview() for v in self.variables],
            "rejected": [r.preview() for r in self.rejected],
        }

    def resolve(
        self,
        values: Mapping[str, object],
        use_defaults: Collection[str] = (),
        check_secret: SecretCheck = no_check,
    ) -> list[dict[str, Any]]:
        """Fill every variable and return one create body per planned server, in order.

        Args:
            values: Variable name → supplied value (a string). Wins over `use_defaults`. A name only
                entries already registered use (`ExistingEntry.variables`) is accepted and ignored.
            use_defaults: Names whose file default the user accepted (the same rule).
            check_secret: The secret-value rule (see `SecretCheck`).
        Returns:
            Create bodies: the config plus `secret_values` (`env`, `headers`, `bearer_token`).
        Raises:
            ImportValuesInvalid: `details.errors` names each missing/unknown/invalid value
                (`values.<name>`) or each rule a resolved server breaks (`servers.<id>.<field>`).
                Messages never contain a value.
        """
        errors = self._check_values(values, use_defaults)
        if errors:
            raise ImportValuesInvalid.listing(errors)
        supplied: dict[str, str] = {k: v for k, v in values.items() if isinstance(v, str)}

        def value_of(ref: Reference) -> str:
            if ref.name in supplied:
                return supplied[ref.name]
            default = ref.default if ref.kind != "input" else self.input_defaults.get(ref.name)
            assert default is not None, "use_defaults was checked against has_default"
            return default

        bodies: list[dict[str, Any]] = []
        for server in self.servers:
            config = map_strings(server.config, lambda text: substitute(text, value_of))
            secret_values: dict[str, Any] = {}
            for slot in server.secrets:
                if not slot.template:
                    continue
                value = substitute(slot.template, value_of)
                try:
                    check_secret(slot.field, value, slot.kind != "env")
                except ConfigInvalid as exc:
                    errors += [FieldError(f"servers.{server.id}.{e.field}", e.code, e.message) for e in exc.errors]
                    continue
                if slot.kind == "env":
                    secret_values.setdefault("env", {})[slot.key] = value
                elif slot.kind == "header":
                    secret_values.setdefault("headers", {})[slot.key] = value
                else:
                    secret_values["bearer_token"] = value
            try:
                parse_server_config(config)
            except ConfigInvalid as exc:
                errors += [FieldError(f"servers.{server.id}.{e.field}", e.code, e.message) for e in exc.errors]
            bodies.append({**config, "secret_values": secret_values})
        if errors:
            raise ImportValuesInvalid.listing(errors)
        return bodies

    def _check_values(self, values: Mapping[str, object], use_defaults: Collection[str]) -> list[FieldError]:
        known = {v.name: v for v in self.variables}
        # A value for an entry already registered (unchanged or skipped) is not unknown, only unused:
        # the preview lists its variables, and a script re-importing with the same values works.
        unused = {name for e in self.existing for name in e.variables} - known.keys()
        values = {k: v for k, v in values.items() if k not in unused}
        use_defaults = [name for name in use_defaults if name not in unused]
        errors: list[FieldError] = []
        for name, value in values.items():
            if name not in known:
                errors.append(FieldError(f"values.{name}", "VALUE_UNKNOWN", "is not a variable of this preview"))
            elif not isinstance(value, str) or len(value) > MAX_VALUE_CHARS or "\x00" in value:
                errors.append(
                    FieldError(f"values.{name}", "VALUE_INVALID", "must be a string of at most 32 KiB without NUL")
                )
        for name in use_defaults:
            if name not in known:
                errors.append(FieldError(f"use_defaults.{name}", "VALUE_UNKNOWN", "is not a variable of this preview"))
            elif known[name].default_unusable and name not in values:
                errors.append(
                    FieldError(
                        f"use_defaults.{name}",
                        "DEFAULT_UNUSABLE",
                        "the file's default cannot be a secret value here (see the preview's warnings); supply a value",
                    )
                )
            elif not known[name].has_default and name not in values:
                errors.append(FieldError(f"use_defaults.{name}", "DEFAULT_MISSING", "has no default to accept"))
        errors += [
            FieldError(f"values.{name}", "VALUE_REQUIRED", "needs a value (or accept its default)")
            for name in known
            if name not in values and name not in use_defaults
        ]
        return errors


def map_strings(config: dict[str, Any], fn: Callable[[str], str]) -> dict[str, Any]:
    """A copy of a config body with `fn` applied to every value that may hold a reference."""
    out = dict(config)
    for key in ("command", "cwd", "url"):
        if isinstance(out.get(key), str):
            out[key] = fn(out[key])
    if "args" in out:
        out["args"] = [fn(a) for a in out["args"]]
    for key in ("env", "headers"):
        if key in out:
            out[key] = {k: fn(v) for k, v in out[key].items()}
    return out
