"""Gateway token names (R-8): an empty name and a too-long one are refused with the field's own code."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from mcp_center.errors import RequestInvalid
from mcp_center.service import gateway_tokens
from mcp_center.service.gateway_tokens import ENV_TOKEN_ID, MAX_NAME_CHARS, GatewayTokens
from mcp_center.store import Store
from tests.support.waiting import eventually_sync


@pytest.mark.parametrize(
    ("name", "code", "says"),
    [
        ("", "FIELD_REQUIRED", "is required"),
        ("   ", "FIELD_REQUIRED", "is required"),
        (None, "FIELD_REQUIRED", "is required"),
        ("x" * (MAX_NAME_CHARS + 1), "FIELD_INVALID", f"at most {MAX_NAME_CHARS}"),
        ("tab\there", "FIELD_INVALID", "no control characters"),
        ("a\x00", "FIELD_INVALID", "no control characters"),  # short, so the length is not the problem
    ],
)
def test_a_bad_token_name_names_what_is_wrong(
    make_store: Callable[[], Store], name: object, code: str, says: str
) -> None:
    tokens = GatewayTokens(make_store())
    with pytest.raises(RequestInvalid) as raised:
        tokens.create(name)
    (error,) = raised.value.details["errors"]
    assert (error["field"], error["code"]) == ("name", code)
    assert says in error["message"]
    assert tokens.list() == []


def test_a_good_name_is_kept_trimmed(make_store: Callable[[], Store]) -> None:
    record, token = GatewayTokens(make_store()).create("  laptop  ")
    assert record.name == "laptop"
    assert token not in record.view().values()
    assert "sha256" not in record.view()


def test_a_token_revoked_by_another_instance_is_refused_here_without_reading_the_store_per_call(
    make_store: Callable[[], Store],
) -> None:
    """R-7.1, R-10.1: the check answers from memory while nothing changed, and a revocation made
    through another store (another process or instance) is refused from the next check on."""
    here, there = make_store(), make_store()
    checking, revoking = GatewayTokens(here), GatewayTokens(there)
    record, token = revoking.create("agent")
    assert eventually_sync(lambda: checking.identify(token)) == record.id
    before = here.stamp("gateway_tokens")
    assert checking.identify(token) == record.id
    assert here.stamp("gateway_tokens") == before  # nothing changed: the same cached answer
    revoking.revoke(record.id)
    assert eventually_sync(lambda: checking.identify(token) is None, timeout_s=1.0)


def test_identify_named_gives_the_id_and_name_of_one_look_and_none_once_revoked(
    make_store: Callable[[], Store],
) -> None:
    """R-8.3, R-5.3: the gateway's per-call check names the token for the approval card from the
    same look at the store; the env token is named after its variable; a revoked token is None."""
    tokens = GatewayTokens(make_store(), env_token="mcpg_from_the_environment_0123456789")
    record, token = tokens.create("laptop")
    assert tokens.identify_named(token) == (record.id, "laptop")
    from_env = tokens.identify_named("mcpg_from_the_environment_0123456789")
    assert from_env == (ENV_TOKEN_ID, "MCP_CENTER_SERVE_GATEWAY_TOKEN")
    assert tokens.identify_named("mcpg_not_a_token") is None
    assert tokens.identify_named(None) is None
    tokens.revoke(record.id)
    assert tokens.identify_named(token) is None


def test_a_current_token_is_hashed_once_and_its_revocation_still_counts_at_the_next_check(
    make_store: Callable[[], Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    """R-8.3, R-7.1: a client's later requests skip hashing its token again; a wrong token is hashed
    on every try (never remembered); a revoked token is refused at once although its digest is kept."""
    hashed: list[str] = []
    real_hash = gateway_tokens._hash  # pyright: ignore[reportPrivateUsage]

    def counting_hash(token: str) -> str:
        hashed.append(token)
        return real_hash(token)

    monkeypatch.setattr(gateway_tokens, "_hash", counting_hash)
    tokens = GatewayTokens(make_store(), env_token="mcpg_from_the_environment_0123456789")
    record, token = tokens.create("laptop")
    hashed.clear()
    for _ in range(3):
        assert tokens.identify_named(token) == (record.id, "laptop")
        assert tokens.identify_named("mcpg_from_the_environment_0123456789") == (
            ENV_TOKEN_ID,
            "MCP_CENTER_SERVE_GATEWAY_TOKEN",
        )
        assert tokens.identify_named("mcpg_not_a_token") is None
    assert hashed.count(token) == 1
    assert hashed.count("mcpg_from_the_environment_0123456789") == 1
    assert hashed.count("mcpg_not_a_token") == 3
    tokens.revoke(record.id)
    assert tokens.identify_named(token) is None
    assert hashed.count(token) == 1
