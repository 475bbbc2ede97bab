"""Looking inside exception groups in tests (anyio task groups wrap what a test expects)."""

from __future__ import annotations

from typing import cast

__all__ = ["leaves"]


def leaves(exc: BaseException) -> list[BaseException]:
    """The non-group exceptions inside `exc`, depth-first (nested groups opened), or `[exc]`.

    `isinstance(exc, BaseExceptionGroup)` leaves the members' type unknown to pyright; a group's
    members are `BaseException`s by definition, which the cast states."""
    if isinstance(exc, BaseExceptionGroup):
        group = cast("BaseExceptionGroup[BaseException]", exc)
        return [leaf for inner in group.exceptions for leaf in leaves(inner)]
    return [exc]
