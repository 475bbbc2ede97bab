"""pydantic's errors as our FieldErrors, and the field names a model accepts at a place in a body,
for "did you mean" (issue 16, R-7.3).

A body with a typo'd key (`comand`, `versoin`) is refused as FIELD_UNKNOWN; the fields its model
knows at that level are the candidates `errors.unknown_field` offers. `FieldErrorList` turns each
pydantic error into a FieldError by one rule for the server configuration and the REST bodies.
Pure: reads the models' declarations only.
"""

from __future__ import annotations

import re
import types
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from mcp_center.errors import MAX_SUGGESTED, FieldError, most_telling_first, not_one_of, unknown_field

__all__ = ["FieldErrorList", "field_names_at"]


def _models_in(annotation: Any) -> tuple[list[type[BaseModel]], bool]:
    """The models an annotation holds (`A | B | None`, `Annotated[A, ...]`), and whether a
    container (`list[A]`, `dict[str, A]`) wraps them (its index or key comes next in a path)."""
    origin: Any = get_origin(annotation)
    if origin is Annotated:
        return _models_in(get_args(annotation)[0])
    if origin is Union or origin is types.UnionType:
        found = [m for arg in get_args(annotation) for m in _models_in(arg)[0]]
        wrapped = any(_models_in(arg)[1] for arg in get_args(annotation))
        return found, wrapped
    if origin in (list, dict, tuple, set, frozenset, Sequence):
        args = get_args(annotation)
        return (_models_in(args[-1])[0] if args else []), True
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation], False
    return [], False


def _fields(model: type[BaseModel]) -> dict[str, FieldInfo]:
    fields: dict[str, FieldInfo] = model.__pydantic_fields__
    return fields


def _tags(model: type[BaseModel]) -> set[str]:
    """The literal values a model's fields are fixed to (a discriminated union's tag is one)."""
    return {
        str(value)
        for info in _fields(model).values()
        if get_origin(info.annotation) is Literal
        for value in get_args(info.annotation)
    }


def field_names_at(root: Any, path: Sequence[str | int]) -> list[str]:
    """The field names (aliases where set) of the object that holds the last part of `path`.

    Args:
        root: A model class or an annotation of models (a discriminated union, `Annotated[...]`).
        path: A pydantic error `loc`: field names, list indexes and dict keys, and the tag a
            discriminated union inserts (`("stdio", "comand")`, `("auth", "oauth", "scopez")`).
    Returns:
        The names sorted; [] where the path leaves the models (a dict of free keys, an unknown field).
    """
    models: list[type[BaseModel]]
    models, wrapped = _models_in(root)
    for part in path[:-1]:
        if wrapped:  # a list index or a dict key
            wrapped = False
            continue
        if len(models) > 1:
            tagged = [m for m in models if str(part) in _tags(m)]
            if tagged:
                models = tagged[:1]
                continue
        if len(models) != 1:
            return []
        info = _fields(models[0]).get(str(part))
        if info is None:
            return []
        models, wrapped = _models_in(info.annotation)
    if wrapped:
        return []
    return sorted({info.alias or name for model in models for name, info in _fields(model).items()})


class FieldErrorList:
    """FieldErrors built from pydantic errors (`ValidationError.errors()` items), one rule for all:
    `missing` is FIELD_REQUIRED, `extra_forbidden` FIELD_UNKNOWN with the closest known field names
    (for the first `MAX_SUGGESTED` unknown fields only: each is a search of its own, and a caller
    chooses how many keys to send), `literal_error`/`enum` FIELD_INVALID naming the allowed values,
    anything else FIELD_INVALID with pydantic's message (R-7.3, issue 16).

    Args:
        known_at: The field names known beside the unknown one at a pydantic `loc` (e.g.
            `field_names_at(Model, loc)`); called for the first `MAX_SUGGESTED` unknown fields.
    """

    __slots__ = ("_known_at", "_unknown", "errors")

    def __init__(self, known_at: Callable[[Sequence[str | int]], Sequence[str]]) -> None:
        self._known_at = known_at
        self._unknown = 0
        self.errors: list[FieldError] = []
        """What was added so far, in order (a caller may append its own FieldErrors too)."""

    def add(self, error: Mapping[str, Any], field: str) -> None:
        """Add pydantic's `error` as a FieldError on the dotted path `field` (the caller's reading of
        its `loc`)."""
        kind = error.get("type")
        if kind == "missing":
            self.errors.append(FieldError(field, "FIELD_REQUIRED", "is required"))
        elif kind == "extra_forbidden":
            self._unknown += 1
            known = self._known_at(error.get("loc", ())) if self._unknown <= MAX_SUGGESTED else ()
            self.errors.append(unknown_field(field, known))
        elif kind in {"literal_error", "enum"}:
            expected = str(error.get("ctx", {}).get("expected", ""))
            self.errors.append(not_one_of(field, error.get("input"), re.findall(r"'([^']*)'", expected)))
        else:
            self.errors.append(FieldError(field, "FIELD_INVALID", str(error.get("msg", "invalid"))))

    def ranked(self) -> list[FieldError]:
        """The errors, the most telling first (`errors.most_telling_first`)."""
        return most_telling_first(self.errors)
