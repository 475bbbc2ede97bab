"""Narrowing parsed JSON in tests and fake servers, so strict pyright sees no Unknown (issue 16).

`json.loads` and `response.json()` return `Any`, and `isinstance(value, dict)` narrows to
`dict[Unknown, Unknown]`, which `reportUnknown*` flags at every use. These helpers say what was
checked instead: a JSON object's keys are strings, its members are `Any` until a test reads them.
The stdio fake servers run as plain scripts (some under `python -I`, some in a sandbox with the
system Python) and cannot import this package: each keeps its own two-line `_is_object`/`_object`.
"""

from __future__ import annotations

from typing import Any, TypeGuard

__all__ = ["as_array", "as_object", "is_array", "is_object", "object_or_empty"]


def is_object(value: object) -> TypeGuard[dict[str, Any]]:
    """True for a parsed JSON object (a `dict`; keys are strings in JSON, members not checked)."""
    return isinstance(value, dict)


def is_array(value: object) -> TypeGuard[list[Any]]:
    """True for a parsed JSON array (a `list`; items not checked)."""
    return isinstance(value, list)


def as_object(value: object, what: str = "value") -> dict[str, Any]:
    """`value` as a JSON object. Raises AssertionError naming `what` and the type when it is not one
    (in a test, that is the failure)."""
    assert is_object(value), f"{what} is not a JSON object: {type(value).__name__}"
    return value


def as_array(value: object, what: str = "value") -> list[Any]:
    """`value` as a JSON array. Raises AssertionError naming `what` and the type when it is not one."""
    assert is_array(value), f"{what} is not a JSON array: {type(value).__name__}"
    return value


def object_or_empty(value: object) -> dict[str, Any]:
    """`value` when it is a JSON object, else `{}`: an optional member (missing or null) of a message
    a fake server reads, such as `params` or `arguments`."""
    return value if is_object(value) else {}
