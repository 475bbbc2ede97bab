"""Secrets: key loading, envelope encryption, keyed fingerprints, redaction. Knows nothing of storage."""

from mcp_center.secrets.bearer import presented_bearer
from mcp_center.secrets.cipher import SecretCipher, key_check
from mcp_center.secrets.ids import SecretKind, secret_id, server_prefix
from mcp_center.secrets.keyfiles import decode_key, load_or_create_admin_token, load_or_create_key, read_admin_token
from mcp_center.secrets.redact import (
    REDACTED,
    Redactor,
    default_redactor,
    install_log_redaction,
    mask_credential_shapes,
)

__all__ = [
    "REDACTED",
    "Redactor",
    "SecretCipher",
    "SecretKind",
    "decode_key",
    "default_redactor",
    "install_log_redaction",
    "key_check",
    "load_or_create_admin_token",
    "load_or_create_key",
    "mask_credential_shapes",
    "presented_bearer",
    "read_admin_token",
    "secret_id",
    "server_prefix",
]
