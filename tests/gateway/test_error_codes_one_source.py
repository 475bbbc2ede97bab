"""The gateway spells every stable error code through its error class (`GatewayAuthRequired.code`,
`ServerNotFound.code`), never as a string literal of its own: one source of truth, so a code
cannot drift between the error tree, docs/errors.md and the JSON-RPC messages agents read (cli36:
`GATEWAY_AUTH_REQUIRED: ...` was written out four times in src/mcp_center/gateway/, R-7.3).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import mcp_center.gateway
from mcp_center.errors import CenterError

GATEWAY = Path(mcp_center.gateway.__file__).parent


def _codes() -> set[str]:
    level: list[type[CenterError]] = [CenterError]
    codes: set[str] = set()
    while level:
        codes.update(family.code for family in level)
        level = [sub for family in level for sub in family.__subclasses__()]
    return codes


def _literals(tree: ast.Module) -> Iterator[tuple[int, str]]:
    """`(line, text)` of each string constant of `tree` that is code, not documentation (a bare
    string statement: a docstring); an f-string's literal parts count."""
    documentation = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in documentation:
            yield node.lineno, node.value


def test_no_gateway_module_writes_an_error_code_as_a_literal() -> None:
    codes = _codes()
    assert "GATEWAY_AUTH_REQUIRED" in codes and "MCP_SERVER_NOT_FOUND" in codes
    found = [
        f"{path.relative_to(GATEWAY)}:{line}: {text[:50]!r}"
        for path in sorted(GATEWAY.rglob("*.py"))
        for line, text in _literals(ast.parse(path.read_text()))
        if any(text == code or text.startswith(f"{code}:") for code in codes)
    ]
    assert found == [], found
