"""Elicitation forms: the requested schema, its defaults, and answers checked against it (R-6.1).

Spec: MCP 2025-11-25 "Elicitation" — `requestedSchema` is a flat object whose properties are
primitives: string (`minLength`, `maxLength`, `format` email / uri / date / date-time), number
and integer (`minimum`, `maximum`), boolean, single-select enums (`enum`, `oneOf` of
`{const, title}`, legacy `enumNames`) and multi-select enums (`type: array` whose `items` hold an
`enum` or an `anyOf` of `{const, title}`, with `minItems` / `maxItems`). SEP-1034: a property may
carry a `default`; the client pre-fills the form with it, so a user who accepts without touching
a field sends the default.

Threat: a server asking for something the form cannot show (nested objects), or a user (or a
script driving the API) answering with values the server did not ask for. Unsupported schemas
are refused as a whole (the card is declined with a reason); answers are validated property by
property with stable codes, and unknown properties are refused.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import date, datetime
from typing import Any, Literal, cast
from urllib.parse import urlsplit

from mcp_center.errors import ElicitationAnswerInvalid, FieldError

__all__ = ["FieldKind", "FormField", "FormSchema", "UnsupportedSchema", "looks_secret"]

FieldKind = Literal["string", "number", "integer", "boolean", "enum", "multi_enum"]
_FORMATS = frozenset({"email", "uri", "date", "date-time"})
_SECRET_WORDS = re.compile(
    r"pass(word|phrase|code)?|secret|token|api[_-]?key|private[_-]?key|credential|\bpin\b|otp|ssn|cvv",
    re.IGNORECASE,
)
MAX_FIELDS = 100
MAX_STRING_CHARS = 64 * 1024


class UnsupportedSchema(ValueError):
    """The requested schema is not a flat object of primitive properties; `reason` says why.

    An internal signal of service/ (tests/test_contracts.py): the elicitation is declined with the reason."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _Problem(ValueError):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def looks_secret(name: str, title: str | None = None) -> bool:
    """True for a field whose name or title suggests a secret (password, token, API key, PIN ...)."""
    return bool(_SECRET_WORDS.search(name) or (title and _SECRET_WORDS.search(title)))


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _bound(value: object) -> int | float | None:
    """A `minimum` / `maximum` as the schema wrote it (an int stays an int), or None."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return value


@dataclass(frozen=True)
class FormField:
    """One property of the form.

    Attributes:
        options: `(value, label)` pairs of an enum or multi-select enum.
        default: The schema's default when it is valid for the field (`has_default`), else None.
    """

    name: str
    kind: FieldKind
    title: str | None = None
    description: str | None = None
    required: bool = False
    options: tuple[tuple[str, str], ...] = ()
    minimum: int | float | None = None
    maximum: int | float | None = None
    min_length: int | None = None
    max_length: int | None = None
    format: str | None = None
    min_items: int | None = None
    max_items: int | None = None
    has_default: bool = False
    default: Any = None
    secret: bool = field(default=False)

    def view(self) -> dict[str, Any]:
        """JSON shape for a form renderer."""
        view: dict[str, Any] = {
            "name": self.name,
            "kind": self.kind,
            "title": self.title,
            "description": self.description,
            "required": self.required,
            "secret": self.secret,
        }
        if self.options:
            view["options"] = [{"value": v, "label": label} for v, label in self.options]
        for key in ("minimum", "maximum", "min_length", "max_length", "format", "min_items", "max_items"):
            value = getattr(self, key)
            if value is not None:
                view[key] = value
        if self.has_default:
            view["default"] = self.default
        return view

    def check(self, value: object) -> Any:
        """Return `value` normalized for the server (an integral float becomes an int).

        Raises:
            _Problem: the value breaks the field's rules (code + message).
        """
        if self.kind == "boolean":
            if not isinstance(value, bool):
                raise _Problem("FIELD_INVALID", "must be true or false")
            return value
        if self.kind in ("number", "integer"):
            number = _number(value)
            if number is None or not math.isfinite(number):
                raise _Problem("FIELD_INVALID", f"must be a{'n integer' if self.kind == 'integer' else ' number'}")
            if self.kind == "integer":
                if not number.is_integer():
                    raise _Problem("FIELD_INVALID", "must be an integer")
                value = int(number)
            if self.minimum is not None and number < self.minimum:
                raise _Problem("VALUE_OUT_OF_RANGE", f"must be at least {self.minimum:g}")
            if self.maximum is not None and number > self.maximum:
                raise _Problem("VALUE_OUT_OF_RANGE", f"must be at most {self.maximum:g}")
            return value
        if self.kind == "enum":
            allowed = [v for v, _ in self.options]
            if not isinstance(value, str) or value not in allowed:
                raise _Problem("VALUE_NOT_ALLOWED", "must be one of: " + ", ".join(allowed))
            return value
        if self.kind == "multi_enum":
            return self._check_multi(value)
        return self._check_string(value)

    def _check_multi(self, value: object) -> list[str]:
        allowed = [v for v, _ in self.options]
        if not isinstance(value, list):
            raise _Problem("FIELD_INVALID", "must be a list of choices")
        items = cast(list[object], value)
        if not all(isinstance(v, str) and v in allowed for v in items):
            raise _Problem("VALUE_NOT_ALLOWED", "every choice must be one of: " + ", ".join(allowed))
        choices = [str(v) for v in items]
        if len(set(choices)) != len(choices):
            raise _Problem("VALUE_NOT_ALLOWED", "must not repeat a choice")
        if self.min_items is not None and len(choices) < self.min_items:
            raise _Problem("LENGTH_INVALID", f"must have at least {self.min_items} choice(s)")
        if self.max_items is not None and len(choices) > self.max_items:
            raise _Problem("LENGTH_INVALID", f"must have at most {self.max_items} choice(s)")
        return choices

    def _check_string(self, value: object) -> str:
        if not isinstance(value, str):
            raise _Problem("FIELD_INVALID", "must be a string")
        if len(value) > MAX_STRING_CHARS:
            raise _Problem("LENGTH_INVALID", f"must be at most {MAX_STRING_CHARS} characters")
        if self.min_length is not None and len(value) < self.min_length:
            raise _Problem("LENGTH_INVALID", f"must be at least {self.min_length} characters")
        if self.max_length is not None and len(value) > self.max_length:
            raise _Problem("LENGTH_INVALID", f"must be at most {self.max_length} characters")
        if self.format is not None and not _format_ok(self.format, value):
            raise _Problem("FORMAT_INVALID", f"must be a valid {self.format}")
        return value


def _format_ok(fmt: str, value: str) -> bool:
    if fmt == "email":
        return _is_email(value)
    if fmt == "uri":
        parts = urlsplit(value)
        return bool(parts.scheme) and bool(parts.netloc or parts.path) and not any(c.isspace() for c in value)
    try:
        if fmt == "date":
            date.fromisoformat(value)
        else:
            datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
            return "T" in value.upper()
    except ValueError:
        return False
    return True


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _titled_options(raw: object) -> tuple[tuple[str, str], ...] | None:
    if not isinstance(raw, list) or not raw:
        return None
    options: list[tuple[str, str]] = []
    for item in cast(list[object], raw):
        if not isinstance(item, dict):
            return None
        entry = cast(dict[str, object], item)
        const = entry.get("const")
        if not isinstance(const, str):
            return None
        options.append((const, _text(entry.get("title")) or const))
    return tuple(options)


def _plain_options(raw: object, names: object = None) -> tuple[tuple[str, str], ...] | None:
    if not isinstance(raw, list) or not raw or not all(isinstance(v, str) for v in cast(list[object], raw)):
        return None
    values = [str(v) for v in cast(list[object], raw)]
    labels = values
    if isinstance(names, list):
        name_list = cast(list[object], names)
        if len(name_list) == len(values) and all(isinstance(n, str) for n in name_list):
            labels = [str(n) for n in name_list]
    return tuple(zip(values, labels, strict=True))


def _parse_field(name: str, raw: Mapping[str, Any], required: bool) -> FormField:
    kind = raw.get("type")
    common: dict[str, Any] = {
        "name": name,
        "title": _text(raw.get("title")),
        "description": _text(raw.get("description")),
        "required": required,
        "secret": looks_secret(name, _text(raw.get("title"))),
    }
    if kind == "boolean":
        built = FormField(kind="boolean", **common)
    elif kind in ("number", "integer"):
        built = FormField(
            kind="integer" if kind == "integer" else "number",
            minimum=_bound(raw.get("minimum")),
            maximum=_bound(raw.get("maximum")),
            **common,
        )
    elif kind == "string" and ("enum" in raw or "oneOf" in raw):
        options = _titled_options(raw["oneOf"]) if "oneOf" in raw else _plain_options(raw["enum"], raw.get("enumNames"))
        if options is None:
            raise UnsupportedSchema(f"property '{name}': enum options must be strings (or {{const, title}})")
        built = FormField(kind="enum", options=options, **common)
    elif kind == "string":
        fmt = raw.get("format")
        built = FormField(
            kind="string",
            min_length=_int(raw.get("minLength")),
            max_length=_int(raw.get("maxLength")),
            format=fmt if isinstance(fmt, str) and fmt in _FORMATS else None,
            **common,
        )
    elif kind == "array":
        items = raw.get("items")
        items_map = cast(dict[str, object], items) if isinstance(items, dict) else {}
        if "anyOf" in items_map:
            options = _titled_options(items_map["anyOf"])
        else:
            options = _plain_options(items_map.get("enum"), items_map.get("enumNames"))
        if options is None:
            raise UnsupportedSchema(f"property '{name}': an array must be a multi-select of string choices")
        built = FormField(
            kind="multi_enum",
            options=options,
            min_items=_int(raw.get("minItems")),
            max_items=_int(raw.get("maxItems")),
            **common,
        )
    else:
        raise UnsupportedSchema(f"property '{name}': type {kind!r} is not a primitive form field")
    if "default" in raw:
        try:
            default = built.check(raw["default"])
        except _Problem:
            return built  # an invalid default is ignored, never sent on the user's behalf
        return replace(built, has_default=True, default=default)
    return built


@dataclass(frozen=True)
class FormSchema:
    """A parsed `requestedSchema`."""

    fields: tuple[FormField, ...]

    @classmethod
    def parse(cls, schema: object) -> FormSchema:
        """Parse a `requestedSchema`.

        Raises:
            UnsupportedSchema: not an object of at most `MAX_FIELDS` primitive properties.
        """
        if not isinstance(schema, Mapping):
            raise UnsupportedSchema("requestedSchema is not an object")
        mapping = cast(Mapping[str, Any], schema)
        if mapping.get("type", "object") != "object":
            raise UnsupportedSchema("requestedSchema must have type 'object'")
        properties = mapping.get("properties", {})
        if not isinstance(properties, Mapping):
            raise UnsupportedSchema("requestedSchema.properties is not an object")
        props = cast(Mapping[str, Any], properties)
        if len(props) > MAX_FIELDS:
            raise UnsupportedSchema(f"requestedSchema has more than {MAX_FIELDS} properties")
        raw_required = mapping.get("required", [])
        required: Sequence[object] = cast(list[object], raw_required) if isinstance(raw_required, list) else []
        fields: list[FormField] = []
        for name, raw in props.items():
            if not isinstance(raw, Mapping):
                raise UnsupportedSchema(f"property '{name}' is not an object")
            fields.append(_parse_field(name, cast(Mapping[str, Any], raw), name in required))
        return cls(tuple(fields))

    def defaults(self) -> dict[str, Any]:
        """`{field: default}` for every field with a valid default (SEP-1034)."""
        return {f.name: f.default for f in self.fields if f.has_default}

    def secret_fields(self) -> frozenset[str]:
        """Names of fields that look like secrets (their values are never logged)."""
        return frozenset(f.name for f in self.fields if f.secret)

    def validate(self, content: object) -> dict[str, Any]:
        """Check an accepted answer, with defaults filled in for fields it leaves out (SEP-1034).

        Args:
            content: The answer (`{field: value}`), or None for "accept the pre-filled form".
        Returns:
            The content to send to the server.
        Raises:
            ElicitationAnswerInvalid: `details.errors` lists `{field: "content.<name>", code, message}`.
        """
        if content is None:
            content = {}
        if not isinstance(content, dict):
            error = FieldError("content", "FIELD_INVALID", "must be an object of field values")
            raise ElicitationAnswerInvalid(
                "content: must be an object of field values", details={"errors": [error.to_dict()]}
            )
        answer = cast(dict[str, object], content)
        known = {f.name: f for f in self.fields}
        errors = [
            FieldError(f"content.{name}", "FIELD_UNKNOWN", "is not a field of this form")
            for name in answer
            if name not in known
        ]
        result: dict[str, Any] = {}
        for form_field in self.fields:
            if form_field.name in answer and answer[form_field.name] is not None:
                value = answer[form_field.name]
            elif form_field.has_default:
                value = form_field.default
            else:
                if form_field.required:
                    errors.append(FieldError(f"content.{form_field.name}", "FIELD_REQUIRED", "is required"))
                continue
            try:
                result[form_field.name] = form_field.check(value)
            except _Problem as problem:
                errors.append(FieldError(f"content.{form_field.name}", problem.code, problem.message))
        if errors:
            raise ElicitationAnswerInvalid.listing(errors)
        return result

    def view(self) -> list[dict[str, Any]]:
        """The fields as JSON, in the schema's order."""
        return [f.view() for f in self.fields]


def _is_email(value: str) -> bool:
    """`local@domain.tld` in the loose sense of the `email` format: one `@`, no whitespace, a dot
    inside the domain. Linear in the length (a regex for this backtracks quadratically, R-7.3)."""
    local, at, domain = value.partition("@")
    if not at or not local or "@" in domain or any(c.isspace() for c in value):
        return False
    return "." in domain[1:-1]
