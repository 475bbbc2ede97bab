"""Unit tests for AES-GCM envelope encryption and keyed fingerprints (R-1.5, R-2.1)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import os

import pytest

from mcp_center.errors import SecretStoreError
from mcp_center.secrets import SecretCipher
from mcp_center.secrets.cipher import hkdf_sha256

PLAINTEXT = "ghp_plaintext-secret-value-0123456789"
SLOT = "mcp.env.files.0123456789abcdef"


@pytest.fixture
def master_key() -> bytes:
    return os.urandom(32)


@pytest.fixture
def cipher(master_key: bytes) -> SecretCipher:
    return SecretCipher(master_key)


def refused_open(cipher: SecretCipher, token: str, associated_data: str = SLOT) -> SecretStoreError:
    """`open` must fail with SecretStoreError whose text holds neither the token nor the plaintext."""
    with pytest.raises(SecretStoreError) as caught:
        cipher.open(token, associated_data=associated_data)
    error = caught.value
    assert error.code == "SECRET_STORE_ERROR"
    for text in (str(error), repr(error), repr(error.to_dict())):
        assert PLAINTEXT not in text
        body = token.partition(".")[2]
        if len(token) > 3:
            assert token not in text
        if len(body) > 3:
            assert body not in text
    return error


@pytest.mark.parametrize("plaintext", [PLAINTEXT, "", "caf\u00e9 \u2615 \u4e2d\u6587", "x" * 10_000])
def test_a_sealed_value_opens_to_the_same_plaintext(cipher: SecretCipher, plaintext: str) -> None:
    token = cipher.seal(plaintext, associated_data=SLOT)
    assert cipher.open(token, associated_data=SLOT) == plaintext


def test_a_sealed_value_is_a_versioned_token_without_the_plaintext(cipher: SecretCipher) -> None:
    token = cipher.seal(PLAINTEXT, associated_data=SLOT)
    version, _, body = token.partition(".")
    assert version == "v1"
    assert PLAINTEXT not in token
    assert PLAINTEXT.encode() not in base64.urlsafe_b64decode(body)


def test_sealing_the_same_value_twice_gives_different_tokens_that_both_open(cipher: SecretCipher) -> None:
    first = cipher.seal(PLAINTEXT, associated_data=SLOT)
    second = cipher.seal(PLAINTEXT, associated_data=SLOT)
    assert first != second
    assert cipher.open(first, associated_data=SLOT) == cipher.open(second, associated_data=SLOT) == PLAINTEXT


def test_another_cipher_with_the_same_master_key_opens_the_token(master_key: bytes) -> None:
    token = SecretCipher(master_key).seal(PLAINTEXT, associated_data=SLOT)
    assert SecretCipher(master_key).open(token, associated_data=SLOT) == PLAINTEXT


def test_a_token_moved_to_another_slot_does_not_open(cipher: SecretCipher) -> None:
    token = cipher.seal(PLAINTEXT, associated_data=SLOT)
    refused_open(cipher, token, associated_data="mcp.env.other.0123456789abcdef")


def test_a_tampered_token_does_not_open(cipher: SecretCipher) -> None:
    token = cipher.seal(PLAINTEXT, associated_data=SLOT)
    raw = bytearray(base64.urlsafe_b64decode(token.partition(".")[2]))
    raw[len(raw) // 2] ^= 0x01
    tampered = "v1." + base64.urlsafe_b64encode(bytes(raw)).decode("ascii")
    refused_open(cipher, tampered)


def test_a_token_sealed_under_another_master_key_does_not_open(cipher: SecretCipher) -> None:
    token = SecretCipher(os.urandom(32)).seal(PLAINTEXT, associated_data=SLOT)
    refused_open(cipher, token)


@pytest.mark.parametrize(
    "token",
    [
        pytest.param("", id="empty"),
        pytest.param("v1.", id="no-body"),
        pytest.param("v2.AAAA", id="unknown-version"),
        pytest.param("no-dot-at-all", id="no-version"),
        pytest.param("v1.!!!not-base64!!!", id="not-base64"),
        pytest.param("v1.AAAA", id="shorter-than-a-nonce"),
        pytest.param("v1." + base64.urlsafe_b64encode(b"n" * 12 + b"short").decode(), id="shorter-than-a-tag"),
        pytest.param("v1.\u00e9\u00e9\u00e9\u00e9", id="non-ascii"),
    ],
)
def test_a_malformed_token_is_refused_with_secret_store_error(cipher: SecretCipher, token: str) -> None:
    refused_open(cipher, token)


def test_a_truncated_token_does_not_open(cipher: SecretCipher) -> None:
    token = cipher.seal(PLAINTEXT, associated_data=SLOT)
    refused_open(cipher, token[:-8])


@pytest.mark.parametrize("length", [0, 16, 31, 33, 64])
def test_a_master_key_that_is_not_32_bytes_is_refused(length: int) -> None:
    with pytest.raises(SecretStoreError) as caught:
        SecretCipher(b"k" * length)
    assert caught.value.code == "SECRET_STORE_ERROR"


def test_the_fingerprint_is_stable_for_the_same_purpose_and_value(master_key: bytes) -> None:
    first = SecretCipher(master_key).fingerprint(SLOT, PLAINTEXT)
    assert first == SecretCipher(master_key).fingerprint(SLOT, PLAINTEXT)
    assert len(first) == 16
    assert all(c in "0123456789abcdef" for c in first)


def test_the_fingerprint_differs_for_another_purpose_or_value(cipher: SecretCipher) -> None:
    base = cipher.fingerprint(SLOT, PLAINTEXT)
    assert cipher.fingerprint("mcp.env.files.fedcba9876543210", PLAINTEXT) != base
    assert cipher.fingerprint(SLOT, PLAINTEXT + "x") != base
    # The separator keeps (purpose, value) pairs apart even when their concatenation is equal.
    assert cipher.fingerprint("ab", "c") != cipher.fingerprint("a", "bc")


def test_the_fingerprint_depends_on_the_master_key(cipher: SecretCipher) -> None:
    assert SecretCipher(os.urandom(32)).fingerprint(SLOT, PLAINTEXT) != cipher.fingerprint(SLOT, PLAINTEXT)


def test_the_fingerprint_is_not_a_plain_hash_of_the_value(cipher: SecretCipher) -> None:
    fingerprint = cipher.fingerprint(SLOT, PLAINTEXT)
    plain_hashes = [
        hashlib.sha256(PLAINTEXT.encode()).hexdigest(),
        hashlib.sha256((SLOT + PLAINTEXT).encode()).hexdigest(),
        hashlib.sha256(SLOT.encode() + b"\x00" + PLAINTEXT.encode()).hexdigest(),
    ]
    for digest in plain_hashes:
        assert fingerprint not in digest


def test_repr_and_str_of_a_cipher_show_no_key_material(master_key: bytes) -> None:
    cipher = SecretCipher(master_key)
    for text in (repr(cipher), str(cipher)):
        assert master_key.hex() not in text
        assert base64.urlsafe_b64encode(master_key).decode() not in text
        assert repr(master_key) not in text
    assert repr(cipher) == "SecretCipher(<key hidden>)"


# The keys are derived with the standard library's HMAC so that a host with no secret to seal or
# open never loads `cryptography` (R-8.3: idle RSS); they must be the keys `cryptography`'s HKDF
# derived before, or no stored value would open and every fingerprint would change.


@pytest.mark.parametrize(
    "info", [b"mcp-center/v1/secret-encryption", b"mcp-center/v1/secret-fingerprint", b"", b"x" * 300]
)
def test_the_key_derivation_is_cryptographys_hkdf_sha256(info: bytes) -> None:
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF

    for _ in range(20):
        master = os.urandom(32)
        expected = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=info).derive(master)
        assert hkdf_sha256(master, info) == expected


def test_a_value_sealed_and_a_fingerprint_made_with_cryptographys_hkdf_keys_still_match(master_key: bytes) -> None:
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF

    def derive(info: bytes) -> bytes:
        return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=info).derive(master_key)

    nonce = os.urandom(12)
    sealed = AESGCM(derive(b"mcp-center/v1/secret-encryption")).encrypt(nonce, PLAINTEXT.encode(), SLOT.encode())
    token = "v1." + base64.urlsafe_b64encode(nonce + sealed).decode("ascii")
    cipher = SecretCipher(master_key)
    assert cipher.open(token, associated_data=SLOT) == PLAINTEXT
    mac = hmac.new(derive(b"mcp-center/v1/secret-fingerprint"), SLOT.encode() + b"\x00" + b"value", hashlib.sha256)
    assert cipher.fingerprint(SLOT, "value") == mac.hexdigest()[:16]
