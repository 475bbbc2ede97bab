"""Envelope encryption of secret values with AES-GCM (R-1.5) and keyed fingerprints (R-2.1).

Threats: a stolen servers.json or ciphertext file revealing secrets (values are AES-256-GCM
encrypted under a key kept outside servers.json); a ciphertext copied from one key slot to
another (the internal id is the GCM associated data, so a moved ciphertext does not open); a
digest that lets an attacker brute-force a short secret (fingerprints are HMAC-SHA256 under a key
derived from the master key, never a plain hash).

Two sub-keys are derived from the 32-byte master key with HKDF-SHA256 (`info` separates them), so
the encryption key is never used as the MAC key.

`cryptography` (about 8 MB of resident memory once loaded: its Rust extension and OpenSSL's
ciphers) is imported when a value is first sealed or opened, not when the host starts: a host
without secrets never needs it (R-8.3: idle RSS). HKDF of one 32-byte block is two HMAC-SHA256
calls of the standard library (RFC 5869 §2.2, §2.3; tests compare it with `cryptography`'s HKDF),
so keys and fingerprints need no `cryptography` at all.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
from typing import TYPE_CHECKING

from mcp_center.errors import SecretStoreError

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

__all__ = ["SecretCipher", "hkdf_sha256"]

_VERSION = "v1"
_NONCE_BYTES = 12


def hkdf_sha256(master: bytes, info: bytes) -> bytes:
    """HKDF-SHA256 (RFC 5869) of `master` with no salt and `info`: 32 bytes of output key material.

    Extract with the RFC's default salt (32 zero bytes), then one block of Expand (32 bytes is one
    SHA-256 output, so `T(1)` is all of it). Equal to `cryptography`'s `HKDF(SHA256(), length=32,
    salt=None, info=info).derive(master)`, which sealed every existing value's key (R-1.5, R-2.1).
    """
    prk = hmac.new(b"\x00" * hashlib.sha256().digest_size, master, hashlib.sha256).digest()
    return hmac.new(prk, info + b"\x01", hashlib.sha256).digest()


class SecretCipher:
    """Seal and open secret strings; compute keyed fingerprints.

    Args:
        master_key: 32 random bytes (from the key file or `MCP_CENTER_SECRET_KEY`).
    Raises:
        SecretStoreError: the key is not 32 bytes.
    """

    def __init__(self, master_key: bytes) -> None:
        if len(master_key) != 32:
            raise SecretStoreError("the secret key must be 32 bytes")
        self._encryption_key = hkdf_sha256(master_key, b"mcp-center/v1/secret-encryption")
        self._mac_key = hkdf_sha256(master_key, b"mcp-center/v1/secret-fingerprint")
        self._loaded: AESGCM | None = None

    def __repr__(self) -> str:
        return "SecretCipher(<key hidden>)"

    @property
    def _aead(self) -> AESGCM:
        # AES-256-GCM, built (and `cryptography` imported) on the first seal or open.
        if self._loaded is None:
            from cryptography.hazmat.primitives.ciphers.aead import AESGCM

            self._loaded = AESGCM(self._encryption_key)
        return self._loaded

    def seal(self, plaintext: str, *, associated_data: str) -> str:
        """Encrypt `plaintext` bound to `associated_data` (the secret's internal id or OAuth binding).

        Returns:
            `"v1.<urlsafe base64 of nonce || ciphertext || tag>"`, safe to store in JSON.
        """
        nonce = os.urandom(_NONCE_BYTES)
        sealed = self._aead.encrypt(nonce, plaintext.encode("utf-8"), associated_data.encode("utf-8"))
        return f"{_VERSION}.{base64.urlsafe_b64encode(nonce + sealed).decode('ascii')}"

    def open(self, token: str, *, associated_data: str) -> str:
        """Decrypt a value produced by `seal` with the same `associated_data`.

        Raises:
            SecretStoreError: wrong key, wrong associated data, or a corrupted token. The message
                never includes the token.
        """
        from cryptography.exceptions import InvalidTag

        version, _, body = token.partition(".")
        if version != _VERSION or not body:
            raise SecretStoreError("a stored secret has an unknown format")
        try:
            raw = base64.urlsafe_b64decode(body)
            plain = self._aead.decrypt(raw[:_NONCE_BYTES], raw[_NONCE_BYTES:], associated_data.encode("utf-8"))
        except (ValueError, InvalidTag):
            raise SecretStoreError(
                "a stored secret cannot be decrypted (was the secret key changed?); set the value again"
            ) from None
        return plain.decode("utf-8")

    def fingerprint(self, purpose: str, value: str) -> str:
        """Keyed fingerprint of `value` for `purpose` (R-2.1): 16 hex chars of HMAC-SHA256.

        Different purposes (internal ids) give unrelated fingerprints for the same value, and
        without the master key the fingerprint cannot be used to guess the value.
        """
        mac = hmac.new(self._mac_key, purpose.encode("utf-8") + b"\x00" + value.encode("utf-8"), hashlib.sha256)
        return mac.hexdigest()[:16]


KEY_CHECK_PURPOSE = "mcp-center/key-check"
KEY_CHECK_VALUE = "every instance on one store uses one key"


def key_check(cipher: SecretCipher) -> str:
    """The keyed fingerprint a store records the first time and compares later (`Store.check_key`):
    the same for every instance holding the same key, different for another key (R-10.1)."""
    return cipher.fingerprint(KEY_CHECK_PURPOSE, KEY_CHECK_VALUE)
