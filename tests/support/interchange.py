"""The service's rule for secret values, as the interchange planner's `SecretCheck` (R-1.8)."""

from __future__ import annotations

from mcp_center.service.bodies import parse_secret_value

__all__ = ["check_secret_value"]


def check_secret_value(field: str, value: str, header: bool) -> None:
    """The service's rule for secret values, as the `SecretCheck` the planner takes."""
    parse_secret_value(field, value, header=header)
