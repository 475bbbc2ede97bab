"""The import plan: what a pasted client file would create, and how supplied values complete it (R-1.8).

`plan_import` turns file content into an `ImportPlan` without touching the store or the host
environment; `ImportPlan.preview()` is the JSON the user confirms and `ImportPlan.resolve()`
fills the variables with the values the user supplied and returns create bodies for
`McpCenter`. Each entry goes through `parse_server_config`, so every R-1 rule applies
(URL credentials, reserved headers, shell strings, ...); an entry that breaks one is listed under
`rejected` with the stable codes, and the rest can still be imported.

Decisions (our policy, documented in docs/import-export.md#what-we-decided):
- Secrets (R-1.5): an env var is secret when its name looks like a credential (`*_TOKEN`,
  `*_KEY`, `*_SECRET`, `*_PASSWORD`, ...), when its value is one (`postgres://u:p@h`), or when its
  value references a credential-looking variable or a VS Code `password` input. A header is
  secret when its name or value looks like a credential, or when its value holds a `${...}`
  other than a plain variable with a default in the file (`X-Team: ${TEAM:-core}` stays a plain
  header: the file shows its value, and neither name looks like a credential).
- A secret whose file default could not be stored as a secret (`API_KEY: ${API_KEY:-dev}`: shorter
  than the secret minimum) is offered without a default, with a DEFAULT_UNUSABLE warning: the
  preview says what apply would refuse.
- `Authorization: Bearer <token>` (exactly one token, literal or `${VAR}`) becomes
  `auth: {"kind": "bearer"}` with the token as the bearer secret: Authorization is then managed by
  auth (R-1.7), the token can be rotated as `secrets/token?kind=bearer`, and export writes the
  same header back. Any other Authorization value (Basic, a bare token) becomes a secret header.
- A literal secret value that is empty is declared without a value (set it later); the preview
  warns SECRET_NOT_SET. Literal secret values never appear in the preview.
- Ids are `slugify(name)`, made unique against existing servers and earlier entries with a
  `-2`, `-3`, ... suffix; the preview says which clash it resolved.
- Re-importing is safe (`on_conflict`, given with the existing servers' definitions): an entry whose
  name an existing server has is not created again (an id alone is no match: a new name whose
  id is taken gets a `-2` id). An identical definition is
  `unchanged`; a different one is a `conflict` (apply refuses the whole import) under `refuse`,
  skipped under `skip`; `rename` creates it under a `-2` id (an identical one is still skipped). Secret values are
  write-only, so they are not compared: an unchanged entry keeps the stored ones. A plain field
  with a `${...}` matches a stored value some values of its variables would give.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from mcp_center.config import parse_server_config, slugify
from mcp_center.config.pinning import unpinned_package
from mcp_center.errors import ConfigInvalid, FieldError
from mcp_center.interchange.credentials import (
    CREDENTIAL_IN_ARGS_MESSAGE,
    bearer_token_of,
    credential_args,
    credential_query_params,
    is_credential_name,
    is_credential_value,
)
from mcp_center.interchange.dialects import (
    ClientDocument,
    ClientEntry,
    InputDeclaration,
    normalize_entry,
    read_document,
)
from mcp_center.interchange.lenient_json import decode_text, loads_lenient
from mcp_center.interchange.loops import gateway_problem
from mcp_center.interchange.planned import (
    MAX_VALUE_CHARS,
    ON_CONFLICT,
    ExistingEntry,
    ImportPlan,
    Occurrence,
    PlannedServer,
    RejectedEntry,
    SecretCheck,
    SecretKindName,
    SecretSlot,
    VariableInfo,
    map_strings,
    no_check,
)
from mcp_center.interchange.reimport import NameIndex, differing_fields, stored_plain, stored_text
from mcp_center.interchange.variables import Reference, find_references, substitute

__all__ = [
    "MAX_VALUE_CHARS",
    "ON_CONFLICT",
    "ExistingEntry",
    "ImportPlan",
    "PlannedServer",
    "RejectedEntry",
    "SecretCheck",
    "SecretSlot",
    "VariableInfo",
    "plan_document",
    "plan_import",
]

# Rules whose verdict a ${...} stand-in cannot change: keep them even on fields with references.
_ROBUST_CODES = frozenset({"URL_HAS_CREDENTIALS", "URL_HAS_FRAGMENT"})
_STAND_IN = "x"


def plan_import(
    data: bytes | str,
    format: str = "auto",
    *,
    existing_ids: Collection[str] = (),
    check_secret: SecretCheck = no_check,
) -> ImportPlan:
    """Read a client file and plan its import.

    Args:
        data: The file content (bytes or text; at most `MAX_IMPORT_BYTES`).
        format: One of `IMPORT_FORMATS` (`auto` detects).
        existing_ids: Ids already registered (proposed ids avoid them).
        check_secret: The rule for literal secret values (entries that break it are rejected).
    Raises:
        ImportTooLarge, ImportJsonInvalid, ImportFormatUnknown, ImportFormatMismatch.
    """
    return plan_document(
        read_document(loads_lenient(decode_text(data)), format), existing_ids=existing_ids, check_secret=check_secret
    )


def plan_document(
    document: ClientDocument,
    *,
    existing_ids: Collection[str] = (),
    check_secret: SecretCheck = no_check,
    existing: Mapping[str, Mapping[str, Any]] | None = None,
    on_conflict: str = "rename",
    own_origins: Collection[str] = (),
) -> ImportPlan:
    """Plan the import of an already parsed document (see `plan_import`).

    Args:
        existing: Existing server id → its editable configuration (`service.views.editable`):
            with it, entries those servers already have are handled by `on_conflict` (see
            `ON_CONFLICT`) and listed in `ImportPlan.existing`; without it only their ids are
            avoided (`existing_ids`), as `rename` does.
        on_conflict: One of `ON_CONFLICT`.
        own_origins: This host's origins (`loops.origin_of`): an entry for its own gateway is rejected
            (GATEWAY_LOOP), one like an mcp-center gateway elsewhere warned (`loops.gateway_problem`).
    """
    taken = set(existing_ids) | set(existing or {})
    by_name = NameIndex(existing or {})
    assigned: set[str] = set()
    servers: list[PlannedServer] = []
    rejected: list[RejectedEntry] = []
    known: list[ExistingEntry] = []
    for raw in document.entries:
        entry = normalize_entry(raw)
        if isinstance(entry, list):
            rejected.append(RejectedEntry(raw.name, raw.source, tuple(entry)))
            continue
        gateway = gateway_problem(entry, own_origins)
        if gateway is not None and gateway.code == "GATEWAY_LOOP":
            rejected.append(RejectedEntry(raw.name, raw.source, (gateway,)))
            continue
        match = by_name.match(entry.name)
        current = existing[match] if match is not None and existing else None
        named = entry
        if current is not None and by_name.keyed_by_id(entry.name):
            # The export's key for one of two servers with one name (`<name> [<id>]` may be longer
            # than a name may be): not a name, the entry's name is the server's own.
            named = replace(entry, name=str(current.get("name", "")))
        draft = _draft(named, document.inputs, check_secret, current)
        if isinstance(draft, list):
            rejected.append(RejectedEntry(raw.name, raw.source, tuple(draft)))
            continue
        slug = slugify(named.name)
        differing: tuple[str, ...] = ()
        secrets = draft.secrets
        if current is not None:
            compared, secrets = _as_stored(draft, current)
            differing = differing_fields(compared, current)
        if match is not None and (not differing or on_conflict != "rename"):
            outcome = "unchanged" if not differing else ("skipped" if on_conflict == "skip" else "conflict")
            names = tuple(dict.fromkeys(o.reference.name for o in draft.occurrences))
            kept: tuple[tuple[SecretKindName, str], ...] = tuple((s.kind, s.key) for s in secrets if s.template)
            known.append(ExistingEntry(entry.name, entry.source, match, outcome, differing, names, kept))
            continue
        if draft.waived:  # created after all: the stored server's own text does not excuse it
            rejected.append(RejectedEntry(raw.name, raw.source, draft.waived))
            continue
        server_id, clash = _unique_id(slug, taken, assigned)
        assigned.add(server_id)
        config = {"id": server_id, **draft.config}
        servers.append(
            PlannedServer(
                id=server_id,
                name=named.name,
                source=entry.source,
                slug=slug,
                clash=clash,
                transport=entry.transport,
                config=config,
                secrets=draft.secrets,
                occurrences=draft.occurrences,
                warnings=draft.warnings if gateway is None else (gateway, *draft.warnings),
                unusable_defaults=draft.unusable_defaults,
            )
        )
    rejected += [RejectedEntry(m.key, m.path, (m.error(),)) for m in document.misspelled]
    defaults = {name: d.default for name, d in document.inputs.items() if d.default is not None}
    return ImportPlan(
        format=document.format,
        servers=tuple(servers),
        variables=tuple(_variables(servers, document.inputs)),
        rejected=tuple(rejected),
        input_defaults=defaults,
        existing=tuple(known),
    )


def _as_stored(draft: _Draft, current: Mapping[str, Any]) -> tuple[dict[str, Any], tuple[SecretSlot, ...]]:
    """The draft's body as the existing server would store it, and the secrets it still has.

    An env var or header the server keeps in plain text is exported as it is; when its name or
    value looks like a credential (or it holds `${` as text), the import makes it a secret. Such a
    slot whose text IS the stored plain value (`reimport.stored_plain`) is that plain value again, not a
    change (and no secret value to report as not updated). A `${VAR}` for a stored plain value is
    still a change: the file asks for a secret there. The same for a plain `Authorization: Bearer ...`
    header of a server without managed auth, which the import makes `auth: bearer`."""
    config = dict(draft.config)
    kept: list[SecretSlot] = []
    for slot in draft.secrets:
        plain = stored_plain(slot.kind, slot.field, slot.template, current)
        if plain is None:
            kept.append(slot)
        elif slot.kind == "bearer":
            config.update(
                auth={"kind": "none"}, headers={**config["headers"], slot.field.removeprefix("headers."): plain}
            )
        else:
            plain_key, secret_key = ("env", "secret_env") if slot.kind == "env" else ("headers", "secret_headers")
            config[plain_key] = {**config[plain_key], slot.key: plain}
            config[secret_key] = [k for k in config[secret_key] if k != slot.key]
    return config, tuple(kept)


def _unique_id(slug: str, taken: set[str], assigned: set[str]) -> tuple[str, str | None]:
    if slug not in taken and slug not in assigned:
        return slug, None
    clash = "existing" if slug in taken else "file"
    n = 2
    while True:
        suffix = f"-{n}"
        candidate = slug[: 32 - len(suffix)].rstrip("-") + suffix
        if candidate not in taken and candidate not in assigned:
            return candidate, clash
        n += 1


@dataclass(frozen=True)
class _Draft:
    config: dict[str, Any]
    secrets: tuple[SecretSlot, ...]
    occurrences: tuple[Occurrence, ...]
    warnings: tuple[FieldError, ...]
    unusable_defaults: frozenset[str]
    waived: tuple[FieldError, ...] = ()
    """Errors not counted because the text is the matched server's stored value (a literal `${`, a
    plain credential shorter than a secret may be): an export re-imports as `unchanged`. They
    reject the entry when it is created after all (`rename` of a differing entry)."""


def _file_default(ref: Reference, inputs: Mapping[str, InputDeclaration]) -> str | None:
    """The value the file gives `ref` when the user accepts its default, or None (none given)."""
    if ref.kind == "input":
        declared = inputs.get(ref.name)
        return declared.default if declared is not None else None
    return ref.default if ref.kind == "env" else None


def _with_defaults(text: str, found: list[Reference], inputs: Mapping[str, InputDeclaration]) -> str | None:
    """`text` with every reference replaced by its file default; None when one has none."""
    if any(_file_default(r, inputs) is None for r in found):
        return None
    return substitute(text, lambda r: _file_default(r, inputs) or "")


def _unusable_defaults(
    secrets: Iterable[SecretSlot],
    refs: Mapping[str, list[Reference]],
    inputs: Mapping[str, InputDeclaration],
    check_secret: SecretCheck,
) -> tuple[list[FieldError], set[str]]:
    """What apply would refuse with the defaults accepted, said at preview: DEFAULT_UNUSABLE
    warnings and the variables whose default is therefore not offered."""
    warnings: list[FieldError] = []
    unusable: set[str] = set()
    for slot in secrets:
        found = refs.get(slot.field, [])
        filled = _with_defaults(slot.template, found, inputs) if slot.has_references and slot.template else None
        if filled is None:
            continue
        try:
            check_secret(slot.field, filled, slot.kind != "env")
        except ConfigInvalid as exc:
            unusable.update(r.name for r in found)
            names = ", ".join(dict.fromkeys(r.name for r in found))
            warnings += [
                FieldError(
                    slot.field,
                    "DEFAULT_UNUSABLE",
                    f"the file's default for {names} cannot be this secret's value ({e.message}); "
                    "you will be asked for a value",
                )
                for e in exc.errors
            ]
    return warnings, unusable


def _draft(
    entry: ClientEntry,
    inputs: Mapping[str, InputDeclaration],
    check_secret: SecretCheck,
    current: Mapping[str, Any] | None = None,
) -> _Draft | list[FieldError]:
    """Split an entry into plain config and secrets, find its references, and check R-1 (with stand-ins).

    `current` is the stored configuration of the server the entry already is (re-import), or None.
    A text that is exactly that server's stored value is not refused for what the store accepted
    (`${` as text, which has no escape in a client file; a plain credential under the secret
    minimum): such errors go to `_Draft.waived`, and the text is taken as it is (no references).
    """
    errors: list[FieldError] = []
    waived: list[FieldError] = []
    refs: dict[str, list[Reference]] = {}

    def scan(path: str, text: str) -> list[Reference]:
        found, error = find_references(path, text)
        if error is not None and current is not None and stored_text(current, path) == text:
            waived.append(error)
            return []
        if error is not None:
            errors.append(error)
        if found:
            refs[path] = found
        return found

    def credential_ref(ref: Reference) -> bool:
        declared = inputs.get(ref.name)
        return is_credential_name(ref.name) or (declared is not None and declared.password)

    def plain_with_default(value: str, found: list[Reference]) -> bool:
        # `${TEAM:-core}`: the file shows the value, no name looks like a credential, nor does the value.
        shown = _with_defaults(value, found, inputs)
        return shown is not None and not any(credential_ref(r) for r in found) and not is_credential_value(shown)

    secrets: list[SecretSlot] = []
    warnings = list(entry.warnings)
    config: dict[str, Any] = {"name": entry.name, "transport": entry.transport}
    if entry.transport == "stdio":
        assert entry.command is not None
        scan("command", entry.command)
        for i, arg in enumerate(entry.args):
            scan(f"args.{i}", arg)
        warnings += [  # a credential variable there is warned as SECRET_IN_PLAIN_FIELD below instead
            FieldError(f"args.{i}", "CREDENTIAL_IN_ARGS", CREDENTIAL_IN_ARGS_MESSAGE)
            for i in credential_args(entry.args)
            if not any(credential_ref(r) for r in refs.get(f"args.{i}", []))
        ]
        unpinned = unpinned_package(entry.command, entry.args)
        if unpinned is not None:
            warnings.append(FieldError(unpinned.field, "PACKAGE_NOT_PINNED", unpinned.message))
        if entry.cwd is not None:
            scan("cwd", entry.cwd)
        env: dict[str, str] = {}
        for key, value in entry.env.items():
            found = scan(f"env.{key}", value)
            if is_credential_name(key) or is_credential_value(value) or any(credential_ref(r) for r in found):
                secrets.append(SecretSlot("env", key, f"env.{key}", value, bool(found)))
            else:
                env[key] = value
        config.update(
            command=entry.command,
            args=list(entry.args),
            cwd=entry.cwd,
            env=env,
            secret_env=[s.key for s in secrets],
        )
    else:
        assert entry.url is not None
        scan("url", entry.url)
        headers: dict[str, str] = {}
        auth_kind = "none"
        authorizations = [k for k in entry.headers if k.lower() == "authorization"]
        for key, value in entry.headers.items():
            path = f"headers.{key}"
            found = scan(path, value)
            token = bearer_token_of(value) if key.lower() == "authorization" and len(authorizations) == 1 else None
            if token is not None:
                auth_kind = "bearer"
                secrets.append(SecretSlot("bearer", "token", path, token, bool(found)))
            elif (
                is_credential_name(key)
                or is_credential_value(value)
                or (found and not plain_with_default(value, found))
            ):
                secrets.append(SecretSlot("header", key, path, value, bool(found)))
            else:
                headers[key] = value
        warnings += [
            FieldError(
                "url",
                "URL_QUERY_CREDENTIAL",
                f"query parameter '{name}' looks like a credential; it is stored in plain text with the URL "
                "(prefer a secret header if the server accepts one)",
            )
            for name in credential_query_params(entry.url)
        ]
        config.update(
            url=entry.url,
            headers=headers,
            secret_headers=[s.key for s in secrets if s.kind == "header"],
            auth={"kind": auth_kind},
        )
    if errors:
        return errors
    secret_fields = {s.field for s in secrets}
    occurrences = tuple(Occurrence(path, ref, path in secret_fields) for path, found in refs.items() for ref in found)
    warnings += [
        FieldError(
            path,
            "SECRET_IN_PLAIN_FIELD",
            "references a credential-looking variable; its value will be stored in plain text here",
        )
        for path, found in refs.items()
        if path not in secret_fields and any(credential_ref(r) for r in found)
    ]
    for slot in secrets:
        if not slot.template:
            warnings.append(FieldError(slot.field, "SECRET_NOT_SET", "is empty: declared as a secret, set it later"))
        elif not slot.has_references:
            try:
                check_secret(slot.field, slot.template, slot.kind != "env")
            except ConfigInvalid as exc:
                (waived if stored_plain(slot.kind, slot.field, slot.template, current) is not None else errors).extend(
                    exc.errors
                )
    default_warnings, unusable = _unusable_defaults(secrets, refs, inputs, check_secret)
    warnings += default_warnings
    trial = map_strings({"id": slugify(entry.name), **config}, lambda text: substitute(text, _stand_in))
    try:
        parse_server_config(trial)
    except ConfigInvalid as exc:
        errors += [e for e in exc.errors if e.code in _ROBUST_CODES or not _has_references(e.field, refs)]
    if errors:
        return errors
    return _Draft(config, tuple(secrets), occurrences, tuple(warnings), frozenset(unusable), tuple(waived))


def _stand_in(_ref: Reference) -> str:
    return _STAND_IN


def _has_references(error_field: str, refs: Mapping[str, list[Reference]]) -> bool:
    return any(error_field == path or error_field.startswith(path + ".") for path in refs)


def _variables(servers: Iterable[PlannedServer], inputs: Mapping[str, InputDeclaration]) -> list[VariableInfo]:
    seen: dict[str, list[tuple[PlannedServer, Occurrence]]] = {}
    for server in servers:
        for occurrence in server.occurrences:
            seen.setdefault(occurrence.reference.name, []).append((server, occurrence))
    variables: list[VariableInfo] = []
    for name, uses in seen.items():
        ref = uses[0][1].reference
        declared = inputs.get(name)
        if ref.kind == "input":
            defaults = {declared.default if declared else None}
        else:
            defaults = {o.reference.default for _, o in uses}
        default = defaults.pop() if len(defaults) == 1 else None
        default_unusable = default is not None and any(name in server.unusable_defaults for server, _ in uses)
        if default_unusable:
            default = None
        secret = (
            is_credential_name(name)
            or (declared is not None and declared.password)
            or any(o.secret_field for _, o in uses)
        )
        used_in: list[tuple[str, str]] = []
        for server, occurrence in uses:
            if (server.id, occurrence.field) not in used_in:
                used_in.append((server.id, occurrence.field))
        variables.append(
            VariableInfo(
                name=name,
                kind=ref.kind,
                secret=secret,
                has_default=default is not None,
                default=default,
                description=declared.description if declared else None,
                used_in=tuple(used_in),
                default_unusable=default_unusable,
            )
        )
    return variables
