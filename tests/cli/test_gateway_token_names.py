"""`gateway token revoke` takes a name, says when a name is ambiguous or a token already revoked, and
`create` warns about a second live token of one name (issue 16 item 4, R-7.1).

A newcomer ran `gateway token revoke claude-code` (the name they had given) and was told there was no
token with id 'claude-code'; revoking a token twice said "not found" as if it had never existed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcp_center.errors import RequestInvalid
from mcp_center.service import GatewayTokens
from tests.support.cli import run_cli


def token(data: Path, name: str) -> tuple[str, str]:
    """Create a token named `name` in `data`; returns (its id, create's stderr)."""
    created = run_cli(data, "gateway", "token", "create", name)
    assert created.returncode == 0, created.stderr
    records = json.loads(run_cli(data, "gateway", "token", "list", "--json").stdout)
    return max(records, key=lambda r: r["created_at"])["id"], created.stderr


def test_revoke_by_name_then_again_says_already_revoked(tmp_path: Path) -> None:
    token_id, first = token(tmp_path, "claude-code")
    assert "warning" not in first
    gone = run_cli(tmp_path, "gateway", "token", "revoke", "claude-code")
    assert gone.returncode == 0, gone.stderr
    assert gone.stdout.startswith(f"revoked {token_id} ('claude-code') in {tmp_path}")
    assert json.loads(run_cli(tmp_path, "gateway", "token", "list", "--json").stdout) == []
    again = run_cli(tmp_path, "gateway", "token", "revoke", token_id)
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith(f"already revoked: {token_id} ('claude-code', at ")
    assert "nothing changed" in again.stdout
    by_name = run_cli(tmp_path, "gateway", "token", "revoke", "claude-code")
    assert (by_name.returncode, by_name.stdout.split(":")[0]) == (0, "already revoked")
    unknown = run_cli(tmp_path, "gateway", "token", "revoke", "nobody")
    assert unknown.returncode == 3
    assert "GATEWAY_TOKEN_NOT_FOUND" in unknown.stderr


def test_a_name_two_live_tokens_carry_is_refused_with_their_ids_and_create_warns(tmp_path: Path) -> None:
    first_id, _ = token(tmp_path, "laptop")
    second_id, warned = token(tmp_path, "laptop")
    assert f"warning: another live gateway token is named 'laptop' ({first_id})" in warned
    ambiguous = run_cli(tmp_path, "gateway", "token", "revoke", "laptop")
    assert ambiguous.returncode == 2
    assert ambiguous.stderr.splitlines()[0] == (
        f"error [GATEWAY_TOKEN_AMBIGUOUS]: 2 gateway tokens are named 'laptop' ({first_id}, {second_id}): "
        "name one by its id"
    )
    live = {r["id"] for r in json.loads(run_cli(tmp_path, "gateway", "token", "list", "--json").stdout)}
    assert live == {first_id, second_id}  # nothing revoked
    assert run_cli(tmp_path, "gateway", "token", "revoke", first_id).returncode == 0
    # One live token keeps the name now: the name works again.
    last = run_cli(tmp_path, "gateway", "token", "revoke", "laptop")
    assert last.returncode == 0, last.stderr
    assert last.stdout.startswith(f"revoked {second_id} ")


def test_a_revoked_token_no_longer_verifies_and_its_record_keeps_no_hash(tmp_path: Path) -> None:
    tokens = GatewayTokens(tmp_path / "mcp")
    record, secret = tokens.create("ci")
    assert tokens.identify(secret) == record.id
    done = tokens.revoke(record.id)
    assert (done.already, done.record.revoked_at is not None) == (False, True)
    assert tokens.identify(secret) is None
    assert not tokens.is_current(record.id)
    stored = json.loads((tmp_path / "mcp" / "gateway-tokens.json").read_text())["tokens"]
    assert [t["sha256"] for t in stored] == [f"revoked-{record.id}"]
    assert tokens.revoke(record.id).already is True
    assert tokens.list() == []
    assert [r.id for r in tokens.list(revoked=True)] == [record.id]


def test_a_name_whose_tokens_are_all_revoked_says_already_revoked_not_ambiguous(tmp_path: Path) -> None:
    """Both `dup` revoked, `revoke dup` said GATEWAY_TOKEN_AMBIGUOUS: nothing is left to tell apart (issue 16, F7)."""
    first_id, _ = token(tmp_path, "dup")
    second_id, _ = token(tmp_path, "dup")
    for token_id in (first_id, second_id):
        assert run_cli(tmp_path, "gateway", "token", "revoke", token_id).returncode == 0
    again = run_cli(tmp_path, "gateway", "token", "revoke", "dup")
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith(f"already revoked: {second_id} ('dup', at "), again.stdout
    assert "nothing changed" in again.stdout


def test_a_name_that_is_another_tokens_id_is_refused(tmp_path: Path) -> None:
    """`create <alpha's id>` then `revoke <that id>` revoked alpha, and the new token could not be revoked
    by name (issue 16, F7): such a name is refused with a code, and nothing is created."""
    alpha_id, _ = token(tmp_path, "alpha")
    refused = run_cli(tmp_path, "gateway", "token", "create", alpha_id)
    assert refused.returncode == 2
    assert refused.stderr.startswith("error [REQUEST_INVALID]: name: is another gateway token's id"), refused.stderr
    with pytest.raises(RequestInvalid) as caught:
        GatewayTokens(tmp_path / "mcp").create(f" {alpha_id} ")
    assert caught.value.details["errors"][0]["code"] == "NAME_IS_TOKEN_ID"
    live = [r["id"] for r in json.loads(run_cli(tmp_path, "gateway", "token", "list", "--json").stdout)]
    assert live == [alpha_id]
