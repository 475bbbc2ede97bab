"""The connection summary and its digest: what the user confirms before a server may run (R-2.1).

The summary lists everything security-relevant about how mcp-center will reach a server: the
transport; for stdio the command as typed, the absolute program it resolves to right now (so a
changed PATH or a replaced binary location needs a new confirmation), args, cwd and env; for
remote servers the URL, its origin and headers; for every secret whether it is set and a keyed
fingerprint (HMAC under the host key, never a plain hash); the auth kind and, for OAuth, every
setting (grant, client, scopes, CIMD URL, legacy fallback, identity provider, binding) and whether each
OAuth client secret is set; the tool permissions (R-1.4); and for a sandboxed stdio server its whole
sandbox policy (network, limits, extra paths), so loosening a sandbox needs a new confirmation
(R-11.1). Plain env and header values are shown because they are not secret by definition and can
change behaviour (`NODE_OPTIONS`).

Every stdio server's summary says how it will run: `sandbox` is its policy, or `null` for a server
that runs unconfined, with the rights of mcp-center's user (trial40: `trust` showed a summary with no
sandbox field at all, while the page said "Sandbox: off"; CLI, REST and page all read this one).

The digest is `sha256:` + SHA-256 of the canonical JSON of the summary, with a `"sandbox": null`
left out: an unconfined server's digest is the one computed before summaries named the sandbox, so
the confirmations users gave then stay valid (absent and `null` say the same: no policy).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from mcp_center.config import (
    OAUTH_CLIENT_SECRET_KEYS,
    AuthBearer,
    AuthOAuth,
    RemoteServerConfig,
    ServerConfig,
    StdioServerConfig,
)
from mcp_center.secrets import SecretCipher, SecretKind, secret_id
from mcp_center.transports import host_path, resolve_command

__all__ = ["BEARER_KEY", "Summaries", "Summary", "connection_summary", "digest_of", "origin_of", "secret_slots"]

BEARER_KEY = "token"
"""The key name of the bearer token slot (`PUT .../secrets/token?kind=bearer`)."""


def origin_of(url: str) -> str:
    """`scheme://host[:port]` of a URL (lowercased host, default port omitted).

    A non-ASCII host name is shown in its IDNA (punycode) form, which is what the HTTP client
    connects to: "example.com" spelled with a Cyrillic "a" is `xn--exmple-4nf.com`, so a look-alike
    cannot pass the trust review as the real name (R-2.1).
    """
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            host = host.encode("ascii", "backslashreplace").decode("ascii")
    if ":" in host:
        host = f"[{host}]"
    default = {"http": 80, "https": 443}.get(parts.scheme)
    port = f":{parts.port}" if parts.port and parts.port != default else ""
    return f"{parts.scheme}://{host}{port}"


def secret_slots(config: ServerConfig) -> list[tuple[SecretKind, str]]:
    """Every secret slot the configuration declares, as `(kind, key)`."""
    if isinstance(config, StdioServerConfig):
        return [(SecretKind.ENV, key) for key in config.secret_env]
    slots = [(SecretKind.HEADER, key) for key in config.secret_headers]
    if isinstance(config.auth, AuthBearer):
        slots.append((SecretKind.BEARER, BEARER_KEY))
    elif isinstance(config.auth, AuthOAuth):
        slots += [(SecretKind.OAUTH_CLIENT, key) for key in OAUTH_CLIENT_SECRET_KEYS]
    return slots


def _secret_entry(cipher: SecretCipher, ciphertexts: Mapping[str, str], internal_id: str) -> dict[str, Any]:
    token = ciphertexts.get(internal_id)
    if token is None:
        return {"configured": False, "fingerprint": None}
    return {
        "configured": True,
        "fingerprint": cipher.fingerprint(internal_id, cipher.open(token, associated_data=internal_id)),
    }


def connection_summary(config: ServerConfig, ciphertexts: Mapping[str, str], cipher: SecretCipher) -> dict[str, Any]:
    """Build the R-2.1 summary of `config` (JSON-serializable, no secret values).

    Raises:
        SecretStoreError: a stored ciphertext does not open (the key changed).
    """
    summary: dict[str, Any] = {"server_id": config.id, "transport": config.transport}
    if isinstance(config, StdioServerConfig):
        path_env = config.env.get("PATH") or host_path()
        summary.update(
            command=config.command,
            command_path=resolve_command(config.command, path_env, cwd=config.cwd),
            args=list(config.args),
            cwd=config.cwd,
            env=dict(sorted(config.env.items())),
            secret_env={
                key: _secret_entry(cipher, ciphertexts, secret_id(SecretKind.ENV, config.id, key))
                for key in sorted(config.secret_env)
            },
        )
        summary["sandbox"] = None if config.sandbox is None else config.sandbox.model_dump(mode="json")
    else:
        assert isinstance(config, RemoteServerConfig)
        auth: dict[str, Any] = {"kind": config.auth.kind}
        if isinstance(config.auth, AuthBearer):
            auth["token"] = _secret_entry(cipher, ciphertexts, secret_id(SecretKind.BEARER, config.id, BEARER_KEY))
        elif isinstance(config.auth, AuthOAuth):
            # Every OAuth setting decides where credentials go or what they can do.
            auth.update(config.auth.model_dump(mode="json", exclude={"kind"}))
            for key in OAUTH_CLIENT_SECRET_KEYS:
                auth[key] = _secret_entry(cipher, ciphertexts, secret_id(SecretKind.OAUTH_CLIENT, config.id, key))
        summary.update(
            url=config.url,
            origin=origin_of(config.url),
            headers=dict(sorted(config.headers.items(), key=lambda kv: kv[0].lower())),
            secret_headers={
                key: _secret_entry(cipher, ciphertexts, secret_id(SecretKind.HEADER, config.id, key))
                for key in sorted(config.secret_headers, key=str.lower)
            },
            auth=auth,
        )
    summary["tools"] = {
        "disabled": sorted(set(config.disabled_tools)),
        "policies": dict(sorted(config.tool_policies.items())),
    }
    return summary


def digest_of(summary: Mapping[str, Any]) -> str:
    """`sha256:<hex>` over the canonical JSON of a summary, a `"sandbox": null` left out (the form of
    an unconfined server's summary before it named its sandbox: digests confirmed then stay valid)."""
    hashed = {k: v for k, v in summary.items() if not (k == "sandbox" and v is None)}
    canonical = json.dumps(hashed, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class Summary:
    """One computed connection summary and its digest (R-2.1)."""

    data: dict[str, Any]
    """The JSON summary (no secret values)."""
    digest: str
    """`sha256:<hex>` of `data`."""


class Summaries:
    """Summaries computed at most once per configuration within one use case (R-2.1, R-1.4).

    Building a summary opens every secret of the server (for its keyed fingerprint) and resolves
    a stdio command on the PATH; an update used to do that four or five times (old digest, new
    digest, reconcile, connection spec, view). One `Summaries` lives for one use case (a write and
    what follows it: reconcile and the returned view) and answers repeats from memory. It is not
    kept longer: the command's resolution on the PATH is part of the summary and may change.

    The memo key is the configuration's JSON and the ciphertexts of its declared secret slots, so
    a changed config or secret inside the same use case is summarized afresh.
    """

    def __init__(self, cipher: SecretCipher) -> None:
        self._cipher = cipher
        self._memo: dict[tuple[str, tuple[str | None, ...]], Summary] = {}
        self.computed = 0
        """How many summaries were built (not answered from memory): for tests."""

    def of(self, config: ServerConfig, ciphertexts: Mapping[str, str]) -> Summary:
        """The summary of `config` with the secrets in `ciphertexts`.

        Raises:
            SecretStoreError: a stored ciphertext does not open (the key changed).
        """
        key = (
            config.model_dump_json(),
            tuple(ciphertexts.get(secret_id(kind, config.id, name)) for kind, name in secret_slots(config)),
        )
        found = self._memo.get(key)
        if found is None:
            data = connection_summary(config, ciphertexts, self._cipher)
            found = self._memo[key] = Summary(data, digest_of(data))
            self.computed += 1
        return found

    def digest(self, config: ServerConfig, ciphertexts: Mapping[str, str]) -> str:
        """The digest of `of(config, ciphertexts)`."""
        return self.of(config, ciphertexts).digest
