"""Helpers for the interchange tests."""

from __future__ import annotations

from mcp_center.service.bodies import parse_secret_value
from tests.support.hang import HANG_BOUND_S, assert_returns

__all__ = ["HANG_BOUND_S", "assert_returns", "check_secret_value"]


def check_secret_value(field: str, value: str, header: bool) -> None:
    """The service's rule for secret values, as the `SecretCheck` the planner takes."""
    parse_secret_value(field, value, header=header)
