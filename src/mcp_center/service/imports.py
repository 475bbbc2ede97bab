"""Import (R-1.8) and export (R-1.9) over the store: preview with a token, then apply all-or-nothing.

The flow: `Importer.preview(content, format)` plans the import against the servers registered now
and returns the plan with a `token`, a `digest` and `expires_at`. `Importer.apply(request)` takes
the same content and format, the token, the digest the user confirmed, and the values the user
supplied for the variables; it creates every planned server in ONE store transaction or none.

Threats handled here:
- Applying something other than what the user reviewed. The token records a keyed digest of the
  input (content + format) and the digest of the preview. Apply refuses a changed input
  (IMPORT_INPUT_CHANGED), a digest that is not the preview's, or a plan that would now differ
  because servers were added or removed since (IMPORT_PREVIEW_STALE): the plan is recomputed
  inside the transaction against the ids registered at that moment. Unknown and expired tokens
  are refused too (IMPORT_PREVIEW_UNKNOWN / IMPORT_PREVIEW_EXPIRED, after `IMPORT_PREVIEW_TTL_S`).
- A half-applied import. Every server, and every secret, is written in one transaction; any
  error (a value that breaks an R-1 rule, a storage failure) leaves servers.json and the
  ciphertexts as they were.
- A digest that leaks a secret. The input digest is an HMAC under a random key of the preview
  that travels only inside the sealed token, so the preview digest cannot be used to brute-force
  a short secret in the file offline.

Tokens are sealed under the host key, not kept (`ImportPreviews`): any instance sharing the
database and its key applies a preview another one made (behind a load balancer, R-10.2), and a
restart forgets nothing but which tokens were applied. Imported servers start untrusted, untested
and disabled (R-2).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import os
import secrets
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio.to_thread

from mcp_center.errors import (
    CenterError,
    FieldError,
    ImportConflict,
    ImportInputChanged,
    ImportNothingToApply,
    ImportPreviewExpired,
    ImportPreviewStale,
    ImportPreviewUnknown,
    RequestInvalid,
    did_you_mean,
)
from mcp_center.interchange import (
    EXPORT_FORMATS,
    IMPORT_FORMATS,
    ClientDocument,
    decode_text,
    loads_lenient,
    read_document,
)
from mcp_center.models import is_array, is_object
from mcp_center.service.bodies import parse_secret_value
from mcp_center.service.center import McpCenter
from mcp_center.service.records import editable
from mcp_center.service.views import ServerView

if TYPE_CHECKING:
    from mcp_center.config import ServerConfig, Settings
    from mcp_center.interchange import ExportDocument, ImportPlan
    from mcp_center.secrets import SecretCipher

# The planner, the exporter and the templates (`interchange.plan`, `.export`, `.templates`) are
# imported by the functions that use them: `serve` and every one-shot verb import this module, and
# only an import, an export or a template listing needs them (issue 16).

__all__ = [
    "IMPORT_PREVIEW_TTL_S",
    "MAX_APPLIED_PREVIEWS",
    "MAX_ISSUED_PREVIEWS",
    "ApplyRequest",
    "ImportPreview",
    "ImportPreviews",
    "Importer",
    "check_on_conflict",
    "check_one_of",
    "check_secret_value",
    "conflict_error",
    "own_origins",
    "parse_apply_request",
    "parse_preview_request",
    "templates",
]

logger = logging.getLogger(__name__)

IMPORT_PREVIEW_TTL_S = 15 * 60.0
"""Seconds a preview token stays valid."""
MAX_APPLIED_PREVIEWS = 1000
"""Applied preview tokens an instance remembers at once (refused if applied again); the oldest is forgotten first."""
MAX_ISSUED_PREVIEWS = 100
"""Tokens an instance keeps of those it issued (checked without the key); the oldest is forgotten first."""
MAX_TOKEN_CHARS = 1000


def check_secret_value(field_path: str, value: str, header: bool) -> None:
    """The `SecretCheck` of imports: the create API's rule for secret values (`parse_secret_value`)."""
    parse_secret_value(field_path, value, header=header)


@dataclass(frozen=True)
class _Pending:
    key: bytes
    input_digest: str
    preview_digest: str
    expires_at_s: float


_SEAL_PURPOSE = "mcp-center/import-preview"
"""The associated data a preview token is sealed under (no other sealed value opens as one)."""


class ImportPreviews:
    """Preview tokens that any instance sharing the secret key can check: no shared state (R-1.8, R-10.2).

    A token is the preview sealed (AES-GCM, `SecretCipher.seal`) under the host key: a fresh random
    key for the input digest, the input digest (HMAC-SHA256 of the format and text under that key),
    the preview digest, and the expiry (wall-clock seconds). Behind a load balancer the preview and
    the apply may reach different instances: every instance on one database holds the same key
    (R-10.1), so it opens the token there. The input-digest key travels only inside the sealed
    token, so the preview digest a client sees cannot be used to brute-force a short secret of the
    file offline. A token applied here is remembered (`max_applied`, until it expires) and refused
    as unknown; applied again on another instance, it finds its servers created and is stale.

    The tokens issued here are also kept (`max_issued`, the oldest forgotten first) and need no key
    to check: the CLI previews on a data directory that may not exist yet, under a key not yet
    made, and applies in the same process once the directory and its key exist.

    Args:
        ttl_s: Seconds a token stays valid.
        clock: Wall-clock seconds (tests pass a fake one to expire tokens); instances' clocks agree
            well within `ttl_s`.
        max_applied: Applied tokens remembered at once; the oldest is forgotten first.
        max_issued: Tokens issued here kept at once; the oldest is forgotten first.
    """

    def __init__(
        self,
        *,
        ttl_s: float = IMPORT_PREVIEW_TTL_S,
        clock: Callable[[], float] = time.time,
        max_applied: int = MAX_APPLIED_PREVIEWS,
        max_issued: int = MAX_ISSUED_PREVIEWS,
    ) -> None:
        self.ttl_s = ttl_s
        self._clock = clock
        self._max_applied = max_applied
        self._max_issued = max_issued
        self._applied: dict[str, float] = {}
        self._issued: dict[str, _Pending] = {}

    def __repr__(self) -> str:
        return f"ImportPreviews(applied={len(self._applied)})"

    @staticmethod
    def input_digest(key: bytes, text: str, format: str) -> str:
        """Keyed digest (HMAC-SHA256 under the token's own key) of an input: its format and text."""
        message = format.encode("utf-8") + b"\x00" + text.encode("utf-8", "surrogatepass")
        return "hmac-sha256:" + hmac.new(key, message, hashlib.sha256).hexdigest()

    @staticmethod
    def preview_digest(input_digest: str, preview: Mapping[str, Any]) -> str:
        """`sha256:<hex>` over the canonical JSON of the input digest and the preview body."""
        canonical = json.dumps(
            {"input": input_digest, "preview": preview}, sort_keys=True, separators=(",", ":"), ensure_ascii=False
        )
        return "sha256:" + hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()

    @staticmethod
    def new_key() -> bytes:
        """A fresh input-digest key (32 random bytes) for one preview."""
        return secrets.token_bytes(32)

    def issue(self, cipher: SecretCipher, key: bytes, input_digest: str, preview_digest: str) -> str:
        """Seal a preview into its token (URL-safe text, about 300 characters)."""
        pending = _Pending(key, input_digest, preview_digest, self._clock() + self.ttl_s)
        body = {
            "k": base64.urlsafe_b64encode(key).decode("ascii"),
            "i": input_digest,
            "p": preview_digest,
            "e": pending.expires_at_s,
        }
        token = cipher.seal(json.dumps(body, separators=(",", ":")), associated_data=_SEAL_PURPOSE)
        while len(self._issued) >= self._max_issued:
            del self._issued[next(iter(self._issued))]
        self._issued[token] = pending
        return token

    def get(self, cipher: SecretCipher, token: str) -> _Pending:
        """The preview sealed in `token`.

        Raises:
            ImportPreviewUnknown: not a token this host key sealed, or applied already here.
            ImportPreviewExpired: older than `ttl_s`.
        """
        unknown = ImportPreviewUnknown(
            "this import preview is unknown (applied already, or made under another secret key); preview again"
        )
        if token in self._applied:
            raise unknown
        pending = self._issued.get(token)
        if pending is None:
            pending = self._open(cipher, token, unknown)
        if pending.expires_at_s <= self._clock():
            raise ImportPreviewExpired("this import preview expired; preview again", details={"ttl_s": self.ttl_s})
        return pending

    @staticmethod
    def _open(cipher: SecretCipher, token: str, unknown: ImportPreviewUnknown) -> _Pending:
        """The preview sealed in a token issued elsewhere (`unknown` raised when it does not open)."""
        try:
            body = json.loads(cipher.open(token, associated_data=_SEAL_PURPOSE))
            pending = _Pending(
                base64.urlsafe_b64decode(str(body["k"])), str(body["i"]), str(body["p"]), float(body["e"])
            )
        except (CenterError, ValueError, KeyError, TypeError):
            raise unknown from None
        return pending

    def discard(self, token: str, pending: _Pending) -> None:
        """Remember an applied token until it expires (refused here from now on)."""
        self._issued.pop(token, None)
        now = self._clock()
        for applied in [t for t, expires in self._applied.items() if expires <= now]:
            del self._applied[applied]
        while len(self._applied) >= self._max_applied:
            del self._applied[next(iter(self._applied))]
        self._applied[token] = pending.expires_at_s


@dataclass(frozen=True)
class ApplyRequest:
    """What `POST /api/mcp/import/apply` sends: the preview's token and digest, the same input, the values."""

    token: str
    digest: str
    content: str
    format: str = "auto"
    values: Mapping[str, str] = field(default_factory=dict[str, str])
    use_defaults: tuple[str, ...] = ()
    on_conflict: str = "refuse"
    """What the preview was made with (`interchange.ON_CONFLICT`); another mode is a stale preview."""

    def __repr__(self) -> str:  # values may be secrets, content may hold literal secrets
        return (
            f"ApplyRequest(format={self.format!r}, values={sorted(self.values)}, use_defaults={self.use_defaults}, "
            f"on_conflict={self.on_conflict!r})"
        )


def _invalid(field_path: str, code: str, message: str) -> RequestInvalid:
    return RequestInvalid(
        f"{field_path}: {message}", details={"errors": [FieldError(field_path, code, message).to_dict()]}
    )


def check_one_of(field_path: str, value: object, allowed: Sequence[str]) -> str:
    """`value` when it is one of `allowed` (a format, an on-conflict mode; R-1.8, R-1.9).

    Raises:
        RequestInvalid: another value: `field_path` FIELD_INVALID naming the allowed values, with
            `details.did_you_mean` the close ones (`cusor` → `cursor`, issue 16).
    """
    if isinstance(value, str) and value in allowed:
        return value
    message = "must be one of: " + ", ".join(allowed)
    close = did_you_mean(value, allowed) if isinstance(value, str) else []
    error = FieldError(field_path, "FIELD_INVALID", message)
    raise RequestInvalid(f"{field_path}: {message}", details={"errors": [error.to_dict()], "did_you_mean": close})


def _object(body: object, allowed: set[str]) -> dict[str, Any]:
    if not is_object(body):
        raise _invalid("body", "FIELD_INVALID", "must be a JSON object")
    data: dict[str, Any] = body
    extra = sorted(k for k in data if k not in allowed)
    if extra:
        raise _invalid(extra[0], "FIELD_UNKNOWN", "is not a known field")
    return data


def _string(data: Mapping[str, Any], key: str, *, max_chars: int | None = None) -> str:
    value = data.get(key)
    if value is None:
        raise _invalid(key, "FIELD_REQUIRED", "is required")
    if not isinstance(value, str) or (max_chars is not None and not 1 <= len(value) <= max_chars):
        raise _invalid(
            key, "FIELD_INVALID", "must be a string" if max_chars is None else f"must be 1-{max_chars} characters"
        )
    return value


def _format(data: Mapping[str, Any]) -> str:
    return check_one_of("format", data.get("format", "auto"), IMPORT_FORMATS)


def check_on_conflict(value: object) -> str:
    """`value` as an `on_conflict` mode: `refuse` (None too), `skip` or `rename` (R-1.8).

    Raises:
        RequestInvalid: another value (field `on_conflict`, FIELD_INVALID, naming the modes).
    """
    from mcp_center.interchange import ON_CONFLICT  # lazily: see the imports

    if value is None:
        return "refuse"
    return check_one_of("on_conflict", value, ON_CONFLICT)


def parse_preview_request(body: object) -> tuple[str, str, str]:
    """`{"content": "<file text>", "format": "auto", "on_conflict": "refuse"}` → (content, format, on_conflict).

    Raises:
        RequestInvalid: not an object, unknown field, `content` missing or not a string, unknown
            format or on_conflict mode.
    """
    data = _object(body, {"content", "format", "on_conflict"})
    return _string(data, "content"), _format(data), check_on_conflict(data.get("on_conflict"))


def parse_apply_request(body: object) -> ApplyRequest:
    """`{"token", "digest", "content", "format"?, "values"?: {name: value}, "use_defaults"?: [name], "on_conflict"?}`.

    Raises:
        RequestInvalid: a field missing, unknown or of the wrong shape (values must be strings).
    """
    data = _object(body, {"token", "digest", "content", "format", "values", "use_defaults", "on_conflict"})
    token = _string(data, "token", max_chars=MAX_TOKEN_CHARS)
    digest = _string(data, "digest", max_chars=MAX_TOKEN_CHARS)
    content = _string(data, "content")
    raw_values: object = data.get("values")
    raw_values = {} if raw_values is None else raw_values
    if not is_object(raw_values):
        raise _invalid("values", "FIELD_INVALID", "must be an object of name → string")
    values: dict[str, str] = {}
    for name, value in raw_values.items():
        if not isinstance(value, str):
            raise _invalid(f"values.{name}", "FIELD_INVALID", "must be a string")
        values[str(name)] = value
    raw_defaults: object = data.get("use_defaults")
    raw_defaults = [] if raw_defaults is None else raw_defaults
    if not is_array(raw_defaults) or not all(isinstance(n, str) for n in raw_defaults):
        raise _invalid("use_defaults", "FIELD_INVALID", "must be a list of variable names")
    mode = check_on_conflict(data.get("on_conflict"))
    return ApplyRequest(token, digest, content, _format(data), values, tuple(raw_defaults), mode)


@dataclass(frozen=True, slots=True)
class ImportPreview:
    """A planned import, nothing changed yet (R-1.8): confirm it with `Importer.apply`.

    Attributes:
        token: Names this preview in `ApplyRequest` (single use, expires at `expires_at`).
        digest: The preview's digest: `apply` refuses when the plan would now differ from it.
        expires_at: Aware UTC datetime.
        plan: What would be created (`interchange.ImportPlan`: `format`, `servers` (each a
            `PlannedServer`: `id`, `name`, `transport`, `config`, `secrets`, `warnings`),
            `variables` the user must supply (`VariableInfo`) and `rejected` entries with their
            errors). No secret value appears in it.
    """

    token: str
    digest: str
    expires_at: datetime
    plan: ImportPlan
    on_conflict: str = "refuse"

    def to_dict(self) -> dict[str, Any]:
        """`{"token", "digest", "expires_at", "format", "servers", "variables", "rejected", "existing",
        "on_conflict"}` (`ImportPlan.preview`; `existing`: the entries existing servers already
        have, each `{name, source, server_id, outcome: unchanged|skipped|conflict, fields}`)."""
        return {
            "token": self.token,
            "digest": self.digest,
            "expires_at": self.expires_at.isoformat(),
            **previewed(self.plan, self.on_conflict),
        }


def previewed(plan: ImportPlan, on_conflict: str) -> dict[str, Any]:
    """The preview body the user confirms (and its digest covers): the plan's, with the entries
    existing servers already have and the mode that decided them."""
    return {**plan.preview(), "existing": [e.preview() for e in plan.existing], "on_conflict": on_conflict}


def conflict_error(plan: ImportPlan) -> ImportConflict | None:
    """IMPORT_CONFLICT naming every entry that differs from its existing server, or None."""
    conflicts = plan.conflicts
    if not conflicts:
        return None
    named = ", ".join(f"'{c.name}' ({c.server_id}: {', '.join(c.fields)})" for c in conflicts)
    return ImportConflict(
        f"{len(conflicts)} entr{'y has' if len(conflicts) == 1 else 'ies have'} the name of an existing server with "
        f"another definition: {named}; nothing applied. Import with --on-conflict skip (keep the existing) "
        "or rename (add a copy), or edit or delete the server first",
        details={
            "conflicts": [{"name": c.name, "server_id": c.server_id, "fields": list(c.fields)} for c in conflicts]
        },
    )


class Importer:
    """Import, export and templates for one open `McpCenter` (R-1.8 to R-1.10).

    Args:
        center: The open center (its store and its create path are used).
        previews: The tokens' checker; share one per process (the API keeps it on `app.state`): it
            remembers the tokens applied.
    """

    def __init__(self, center: McpCenter, previews: ImportPreviews) -> None:
        self._center = center
        self._previews = previews

    async def preview(self, content: str | bytes, format: str = "auto", on_conflict: str = "refuse") -> ImportPreview:
        """Plan an import against the servers registered now; nothing is changed.

        Args:
            content: The client file (text, or bytes in UTF-8 / UTF-16 with BOM), at most 1 MiB.
            format: One of `IMPORT_FORMATS`.
            on_conflict: An entry an existing server already has (its name) is never created
                twice: an identical one is `unchanged`; a different one is refused by apply
                (`refuse`), skipped (`skip`), or created again under a `-2` id (`rename`).
        Returns:
            An `ImportPreview` (token, digest, expiry and the `ImportPlan`); no secret value appears
            in it. `to_dict()` is the REST JSON.
        Raises:
            ImportTooLarge (413), ImportJsonInvalid (line, column), ImportFormatUnknown,
            ImportFormatMismatch, RequestInvalid (unknown format or on_conflict).
        """
        check_one_of("format", format, IMPORT_FORMATS)
        on_conflict = check_on_conflict(on_conflict)
        text = decode_text(content)
        existing = {c.id: editable(c) for c in await self._center.server_configs()}
        own = await anyio.to_thread.run_sync(lambda: own_origins(self._center.settings))

        from mcp_center.interchange import plan_document  # lazily: see the imports

        def run() -> ImportPlan:
            document = read_document(loads_lenient(text), format)
            return plan_document(
                document, existing=existing, on_conflict=on_conflict, check_secret=check_secret_value, own_origins=own
            )

        plan = await anyio.to_thread.run_sync(run)
        key = self._previews.new_key()
        input_digest = self._previews.input_digest(key, text, format)
        digest = self._previews.preview_digest(input_digest, previewed(plan, on_conflict))
        token = self._previews.issue(self._center.cipher, key, input_digest, digest)
        expires_at = datetime.now(UTC) + timedelta(seconds=self._previews.ttl_s)
        logger.info(
            "import.previewed",
            extra={"format": plan.format, "servers": len(plan.servers), "rejected": len(plan.rejected)},
        )
        return ImportPreview(token=token, digest=digest, expires_at=expires_at, plan=plan, on_conflict=on_conflict)

    async def apply(self, request: ApplyRequest) -> list[ServerView]:
        """Create every server of a confirmed preview, in one transaction (all or nothing).

        Returns:
            The created servers' views (untrusted, untested, disabled).
        Raises:
            ImportPreviewUnknown / ImportPreviewExpired (409): the token.
            ImportInputChanged (409): `content` or `format` is not what was previewed.
            ImportPreviewStale (409): `digest` is not the preview's, or the plan would now differ
                (servers added, changed or removed since; another `on_conflict`).
            ImportConflict (409): under `refuse`, an entry differs from the existing server of its name.
            ImportNothingToApply (422): the preview creates no server.
            ImportValuesInvalid (422): a value missing, unknown, or making a server break R-1.
            StorageError: the store could not be written (nothing was).
        """
        pending = self._previews.get(self._center.cipher, request.token)
        text = decode_text(request.content)
        if not hmac.compare_digest(
            self._previews.input_digest(pending.key, text, request.format), pending.input_digest
        ):
            raise ImportInputChanged("the content or format differs from the one previewed; preview it again")
        # Bytes: compare_digest raises TypeError for str with non-ASCII characters (a client's digest may have them).
        if not hmac.compare_digest(request.digest.encode("utf-8", "surrogatepass"), pending.preview_digest.encode()):
            raise ImportPreviewStale(
                "the digest you confirmed is not this preview's; preview again", details={"reason": "digest_mismatch"}
            )
        from mcp_center.interchange import plan_document  # lazily: see the imports

        document: ClientDocument = await anyio.to_thread.run_sync(
            lambda: read_document(loads_lenient(text), request.format)
        )
        own = await anyio.to_thread.run_sync(lambda: own_origins(self._center.settings))

        def plan(registered: Mapping[str, ServerConfig]) -> list[dict[str, Any]]:
            existing = {server_id: editable(config) for server_id, config in registered.items()}
            planned = plan_document(
                document,
                existing=existing,
                on_conflict=request.on_conflict,
                check_secret=check_secret_value,
                own_origins=own,
            )
            now = previewed(planned, request.on_conflict)
            if self._previews.preview_digest(pending.input_digest, now) != pending.preview_digest:
                raise ImportPreviewStale(
                    "servers were added, changed or removed since the preview, so it would create something else; "
                    "preview again",
                    details={"reason": "servers_changed"},
                )
            refused = conflict_error(planned)
            if refused is not None:
                raise refused
            if not planned.servers:
                raise ImportNothingToApply(
                    "the preview creates no server (every entry is already registered or was rejected)"
                )
            return planned.resolve(request.values, request.use_defaults, check_secret_value)

        created = await self._center.create_servers(plan)
        self._previews.discard(request.token, pending)
        logger.info("import.applied", extra={"servers": len(created)})
        return created

    async def export(self, format: str) -> ExportDocument:
        """Every server in a client's format, secrets as placeholders, plus the gateway snippet (R-1.9).

        Returns:
            An `interchange.ExportDocument` (`format`, `filename`, `config`, `gateway`, `placeholders`,
            `notes`); `to_dict()` is the REST JSON.
        Raises:
            RequestInvalid: `format` is not one of `EXPORT_FORMATS`.
        """
        from mcp_center.interchange import export_servers  # lazily: see the imports

        check_one_of("format", format, EXPORT_FORMATS)
        configs = await self._center.server_configs()
        gateway_url = f"{self._center.settings.base_url}/mcp"
        return export_servers(configs, format, gateway_url, bridge_command())


def own_origins(settings: Settings) -> frozenset[str]:
    """Where this host's gateway is reached (`interchange.origin_of` of each): its base and listen
    URLs, loopback at its port, and the URLs the `serve` of its data directory recorded when one
    runs (it may listen on another port than this process's settings say). An import entry for
    `/mcp` there is this host's own gateway (GATEWAY_LOOP, issue 16)."""
    from mcp_center.interchange.loops import origin_of
    from mcp_center.store.running import running_owner

    urls = [settings.base_url, settings.listen_url, f"http://127.0.0.1:{settings.port}"]
    try:
        owner = running_owner(settings.data_dir)
    except OSError:
        owner = None
    if owner is not None:
        urls += [u for u in (owner.url, owner.local_url) if u is not None]
    return frozenset(o for o in map(origin_of, urls) if o is not None)


def bridge_command() -> str | None:
    """The absolute path of this installation's `mcp-center` program (for the stdio bridge's
    `command`, R-8.1), or None when it cannot be found beside the running Python."""
    candidate = Path(sys.executable).parent / "mcp-center"
    return str(candidate) if candidate.is_file() and os.access(candidate, os.X_OK) else None


def templates() -> list[dict[str, Any]]:
    """The three server templates (R-1.10), each with a ready-to-POST `example` body."""
    from mcp_center.interchange import list_templates  # lazily: see the imports

    return list_templates()
