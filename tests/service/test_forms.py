"""Elicitation forms (R-6.1, SEP-1034): defaults, validation against the requested schema, limits."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_center.errors import ElicitationAnswerInvalid
from mcp_center.service.forms import FormSchema, UnsupportedSchema, looks_secret
from tests.servers.capabilities import ASK_SCHEMA
from tests.support.hang import assert_returns

# The conformance scenario elicitation-sep1034-client-defaults asks exactly this.
SEP1034: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "default": "John Doe"},
        "age": {"type": "integer", "default": 30},
        "score": {"type": "number", "default": 95.5},
        "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
        "verified": {"type": "boolean", "default": True},
    },
}

EVERYTHING_LIKE: dict[str, Any] = {
    "type": "object",
    "properties": {
        "check": {"type": "boolean"},
        "homepage": {"type": "string", "format": "uri"},
        "birthdate": {"type": "string", "format": "date"},
        "hero": {"type": "string", "oneOf": [{"const": "hero-1", "title": "Superman"}], "default": "hero-1"},
        "fish": {
            "type": "array",
            "minItems": 1,
            "maxItems": 2,
            "items": {"anyOf": [{"const": "fish-1", "title": "Tuna"}, {"const": "fish-2", "title": "Salmon"}]},
            "default": ["fish-1"],
        },
        "pet": {"type": "string", "enum": ["pet-1", "pet-2"], "enumNames": ["Cats", "Dogs"], "default": "pet-1"},
    },
}


def _codes(exc: ElicitationAnswerInvalid) -> list[tuple[str, str]]:
    return [(e["field"], e["code"]) for e in exc.details["errors"]]


def test_accepting_without_content_sends_every_default_with_its_type() -> None:
    form = FormSchema.parse(SEP1034)
    assert form.validate(None) == {
        "name": "John Doe",
        "age": 30,
        "score": 95.5,
        "status": "active",
        "verified": True,
    }


def test_given_values_win_over_defaults_and_integral_floats_become_integers() -> None:
    form = FormSchema.parse(SEP1034)
    answer = form.validate({"name": "Ann", "age": 41.0, "verified": False})
    assert answer["name"] == "Ann"
    assert answer["age"] == 41
    assert isinstance(answer["age"], int)
    assert answer["verified"] is False
    assert answer["status"] == "active"


def test_titled_enums_multi_selects_and_legacy_enum_names_are_understood() -> None:
    form = FormSchema.parse(EVERYTHING_LIKE)
    views = {f["name"]: f for f in form.view()}
    assert views["hero"]["options"] == [{"value": "hero-1", "label": "Superman"}]
    assert views["pet"]["options"][1] == {"value": "pet-2", "label": "Dogs"}
    assert views["fish"]["kind"] == "multi_enum"
    assert form.defaults() == {"hero": "hero-1", "fish": ["fish-1"], "pet": "pet-1"}
    assert form.validate({"fish": ["fish-2", "fish-1"]})["fish"] == ["fish-2", "fish-1"]


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ({"age": "thirty"}, ("content.age", "FIELD_INVALID")),
        ({"age": 30.5}, ("content.age", "FIELD_INVALID")),
        ({"age": True}, ("content.age", "FIELD_INVALID")),
        ({"age": 200}, ("content.age", "VALUE_OUT_OF_RANGE")),
        ({"status": "gone"}, ("content.status", "VALUE_NOT_ALLOWED")),
        ({"verified": "yes"}, ("content.verified", "FIELD_INVALID")),
        ({"email": "not-an-email"}, ("content.email", "FORMAT_INVALID")),
        ({"colors": ["red", "red"]}, ("content.colors", "VALUE_NOT_ALLOWED")),
        ({"colors": ["purple"]}, ("content.colors", "VALUE_NOT_ALLOWED")),
        ({"surprise": 1}, ("content.surprise", "FIELD_UNKNOWN")),
    ],
)
def test_an_answer_that_breaks_the_schema_is_refused_with_the_field_and_a_stable_code(
    content: dict[str, Any], expected: tuple[str, str]
) -> None:
    with pytest.raises(ElicitationAnswerInvalid) as caught:
        FormSchema.parse(ASK_SCHEMA).validate(content)
    assert expected in _codes(caught.value)
    assert caught.value.code == "ELICITATION_ANSWER_INVALID"


def test_a_required_field_without_a_default_must_be_answered() -> None:
    schema = {"type": "object", "properties": {"code": {"type": "string", "minLength": 3}}, "required": ["code"]}
    form = FormSchema.parse(schema)
    with pytest.raises(ElicitationAnswerInvalid) as caught:
        form.validate({})
    assert _codes(caught.value) == [("content.code", "FIELD_REQUIRED")]
    with pytest.raises(ElicitationAnswerInvalid) as short:
        form.validate({"code": "ab"})
    assert _codes(short.value) == [("content.code", "LENGTH_INVALID")]


def test_an_invalid_default_is_ignored_never_sent_on_the_users_behalf() -> None:
    form = FormSchema.parse({"type": "object", "properties": {"n": {"type": "integer", "maximum": 5, "default": 9}}})
    assert form.defaults() == {}
    assert form.validate({}) == {}


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "array"},
        {"type": "object", "properties": {"nested": {"type": "object", "properties": {}}}},
        {"type": "object", "properties": {"list": {"type": "array", "items": {"type": "integer"}}}},
        {"type": "object", "properties": {"x": "not a schema"}},
        {"type": "object", "properties": {f"f{i}": {"type": "string"} for i in range(101)}},
        "nope",
    ],
)
def test_a_schema_that_is_not_a_flat_form_is_unsupported(schema: object) -> None:
    with pytest.raises(UnsupportedSchema):
        FormSchema.parse(schema)


def test_content_that_is_not_an_object_is_refused() -> None:
    with pytest.raises(ElicitationAnswerInvalid) as caught:
        FormSchema.parse(SEP1034).validate(["John"])
    assert _codes(caught.value) == [("content", "FIELD_INVALID")]


@pytest.mark.parametrize(
    ("name", "title", "secret"),
    [
        ("password", None, True),
        ("api_key", None, True),
        ("x", "Your PIN", True),
        ("githubToken", None, True),
        ("name", "Full name", False),
        ("spinner", None, False),
    ],
)
def test_secret_looking_fields_are_recognized(name: str, title: str | None, secret: bool) -> None:
    assert looks_secret(name, title) is secret


def _an_email_of_256_kib_of_dots_is_checked() -> None:
    from mcp_center.service.forms import _is_email  # pyright: ignore[reportPrivateUsage]

    assert not _is_email("a@" + "." * 256_000 + " ")
    assert _is_email("ada@example.org")
    assert not _is_email("ada@example.")
    assert not _is_email("ada@@example.org")


def test_the_email_format_check_is_linear_in_the_answer_length() -> None:
    """A hang check (R-7.3): a backtracking pattern took 12 s for 64 KiB of dots, quadratically more after."""
    assert_returns(_an_email_of_256_kib_of_dots_is_checked)
