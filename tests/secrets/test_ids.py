"""Unit tests for internal secret ids `mcp.<kind>.<server>.<hash of key name>` (R-1.5)."""

from __future__ import annotations

import re

import pytest

from mcp_center.secrets import SecretKind, secret_id, server_prefix


@pytest.mark.parametrize("kind", list(SecretKind))
def test_a_secret_id_has_kind_server_and_16_hex_characters(kind: SecretKind) -> None:
    assert re.fullmatch(rf"mcp\.{kind.value}\.my-server\.[0-9a-f]{{16}}", secret_id(kind, "my-server", "API_TOKEN"))


def test_the_key_name_is_hashed_not_embedded() -> None:
    assert "GITHUB_TOKEN" not in secret_id(SecretKind.ENV, "files", "GITHUB_TOKEN")


def test_header_keys_are_case_insensitive() -> None:
    ids = {secret_id(SecretKind.HEADER, "remote", name) for name in ("X-Api-Key", "x-api-key", "X-API-KEY")}
    assert len(ids) == 1


def test_env_keys_are_case_sensitive() -> None:
    assert secret_id(SecretKind.ENV, "files", "TOKEN") != secret_id(SecretKind.ENV, "files", "token")


def test_kind_server_and_key_each_change_the_id() -> None:
    base = secret_id(SecretKind.HEADER, "remote", "X-Key")
    assert secret_id(SecretKind.ENV, "remote", "X-Key") != base
    assert secret_id(SecretKind.HEADER, "remote-2", "X-Key") != base
    assert secret_id(SecretKind.HEADER, "remote", "X-Other") != base


def test_the_same_inputs_give_the_same_id() -> None:
    assert secret_id(SecretKind.BEARER, "remote", "token") == secret_id(SecretKind.BEARER, "remote", "token")


def test_server_prefix_matches_every_slot_of_the_server() -> None:
    prefixes = server_prefix("files")
    assert len(prefixes) == len(SecretKind)
    for kind in SecretKind:
        assert secret_id(kind, "files", "KEY").startswith(prefixes)


def test_server_prefix_does_not_match_a_server_whose_id_extends_it() -> None:
    prefixes = server_prefix("files")
    for kind in SecretKind:
        assert not secret_id(kind, "files-2", "KEY").startswith(prefixes)
        assert not secret_id(kind, "file", "KEY").startswith(prefixes)
