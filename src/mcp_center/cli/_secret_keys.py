"""`mcp-center secret set`'s checks before it asks for the value (R-1.5, R-7.3).

A value is typed (or pasted) last, after everything that can be refused without it: the kind,
the server, and the key. The key must be one the server uses — an env var (plain or secret) of a
stdio server, a header of a remote one — unless `--new` says it is new: a typo (`API_KEYY`) would
otherwise declare a secret nothing reads and leave the real one unset.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcp_center.cli._shared import fail
from mcp_center.errors import CenterError, FieldError, SecretKeyInvalid

if TYPE_CHECKING:
    from mcp_center.config import ServerConfig
    from mcp_center.secrets import SecretKind

__all__ = ["check_secret_key", "secret_kind"]


def secret_kind(kind: str) -> SecretKind:
    """The `SecretKind` of `--kind`.

    Raises:
        typer.Exit: code 2, `REQUEST_INVALID` with field code FIELD_INVALID naming the kinds.
    """
    from mcp_center.service.secret_values import parse_secret_kind

    try:
        return parse_secret_kind(kind)
    except CenterError as exc:
        raise fail(exc) from None


def check_secret_key(server_id: str, config: ServerConfig, kind: SecretKind, key: str, *, new: bool) -> None:
    """Refuse a key `secret set` could not store, or (without `new`) one the server does not use.

    Args:
        server_id: For the message.
        config: The server's configuration now.
        kind: From `secret_kind`.
        key: An env var name (environment), a header name (header, compared without case),
            `token` (bearer) or `client_secret` / `private_key` (oauth).
        new: The user said the key is new (`--new`): only its form is checked.
    Raises:
        typer.Exit: code 2, `SECRET_KEY_INVALID`: a key the kind or transport does not allow (the
            service's own check), or, without `new`, an env var / header the server does not have,
            with field code KEY_NOT_USED and the names it does use (never a value).
    """
    from mcp_center.config import StdioServerConfig
    from mcp_center.secrets import SecretKind
    from mcp_center.service.secret_values import declare_secret

    try:
        declare_secret(config, kind, key)  # the form of the key, for this kind and transport
    except CenterError as exc:
        raise fail(exc) from None
    if new or kind not in (SecretKind.ENV, SecretKind.HEADER):
        return
    if isinstance(config, StdioServerConfig):
        used = [*config.env, *config.secret_env]
        known = key in used
        what = "env var"
    else:
        used = [*config.headers, *config.secret_headers]
        known = key.lower() in {name.lower() for name in used}
        what = "header"
    if known:
        return
    uses = f"it uses: {', '.join(sorted(used, key=str.lower))}" if used else f"it has no {what}s yet"
    message = f"{server_id} has no {what} {key} ({uses}); pass --new to add it"
    error = FieldError("key", "KEY_NOT_USED", message)
    raise fail(SecretKeyInvalid(f"key: {message}", details={"key": key, "errors": [error.to_dict()]}))
