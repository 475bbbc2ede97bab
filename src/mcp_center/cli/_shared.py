"""What every command group shares: the Typer app and its sub-apps, the consoles, the common
options, and the helpers that open a center (`run_center`), report an error (`fail`, with the
error's `exit_code`) and ask a running host (`host_request`, exiting with the code
`host.exit_code_for_status` gives its HTTP status).
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Awaitable, Callable, Generator, Iterable, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Final, TypedDict, TypeVar

import typer
from rich.console import Console
from rich.segment import Segment
from rich.text import Text
from typer.core import TyperCommand, TyperGroup, TyperOption

from mcp_center import __version__
from mcp_center.cli._group_options import inherited_options
from mcp_center.cli._suggest import forget, remember, suggested
from mcp_center.cli._where import data_dir_phrase, serve_state
from mcp_center.cli._wording import ECHOED_VALUE_CHARS, ValueRefused, data_dir_value, wrong_type_value
from mcp_center.config import Settings
from mcp_center.errors import (
    ArgumentMissing,
    CenterError,
    CommandUnknown,
    HostRequestFailed,
    NotFound,
    OptionUnknown,
    OptionValueInvalid,
    ServerNotFound,
)
from mcp_center.models import is_array, is_object

if TYPE_CHECKING:
    # Imported where used: the service pulls in the runtime, the MCP SDK and the web stack (about
    # a second of CPU), which `--help`, `--version` and the verbs that ask a running host over REST
    # never need (issue 16: start-up cost of every CLI process).
    from mcp_center.service import McpCenter
    from mcp_center.store import Store

__all__ = [
    "CONSOLE_OPTIONS",
    "NEXT_STEP",
    "CenterCommand",
    "CenterGroup",
    "DataDir",
    "DatabaseUrl",
    "HostUrl",
    "JsonOut",
    "ProfileOpt",
    "app",
    "approvals_app",
    "cells",
    "err",
    "fail",
    "gateway_app",
    "gateway_token_app",
    "has_state",
    "host_request",
    "opened_store",
    "out",
    "print_json",
    "print_stderr_tail",
    "refuse_files_of_a_database_serve",
    "run_center",
    "sandbox_app",
    "secret_app",
    "settings_for",
    "settings_for_server",
    "shown",
    "styled",
    "visible",
    "yes",
]

T = TypeVar("T")


def _untyped_flags(params: list[Any]) -> list[Any]:
    # typer's rich help prints an option's type beside it, and for a flag that type is `<bool>`
    # (`--yes <bool>`) although a flag takes no value. An empty metavar is what it shows instead.
    # (Any: typer's parameter and context classes come from its private copy of click.)
    for param in params:
        if isinstance(param, TyperOption) and param.is_flag and param.metavar is None:
            param.metavar = ""
    return params


def _parsed(parse: Callable[[Any, list[str]], list[str]], ctx: Any, args: list[str]) -> list[str]:
    """`parse(ctx, args)` (a command's or group's `parse_args`), with an unknown option refused as
    `error [OPTION_UNKNOWN]: ...` and the closest of the command's options, and an option's value
    missing, given to a flag or not of its type as `error [OPTION_VALUE_INVALID]: ...`, and a
    required argument left out as `error [ARGUMENT_MISSING]: ...` with the command's usage (exit 2),
    not typer's error box (issue 16, R-7.3). Then the options the enclosing groups were given
    apply to this command (`_group_options.inherited_options`).

    Raises:
        typer.Exit: code 2 after that line (and, for an unknown option, its `did you mean`).
    """
    from typer._click.exceptions import BadOptionUsage, BadParameter, MissingParameter, NoSuchOption

    where = ctx.command_path
    given = list(args)  # `parse` consumes `args`: the value of an option of the wrong type is echoed from here
    try:
        rest = parse(ctx, args)
    except NoSuchOption as exc:
        from mcp_center.errors import did_you_mean

        known = [name for param in ctx.command.get_params(ctx) for name in (*param.opts, *param.secondary_opts)]
        name = exc.option_name
        close = did_you_mean(name, [k for k in known if k.startswith("--")] if name.startswith("--") else known)
        raise fail(
            OptionUnknown(
                f"no option '{shown(name)}' for {where}; see '{where} --help' for its options",
                details={"option": name[:100], "command": where, "did_you_mean": close},
            )
        ) from None
    except BadOptionUsage as exc:
        name = exc.option_name
        flag = any(name in param.opts and getattr(param, "is_flag", False) for param in ctx.command.get_params(ctx))
        what = "is a flag and takes no value" if flag else "needs a value"
        raise fail(_value_invalid(where, name, "flag" if flag else "missing", what)) from None
    except MissingParameter as exc:
        param = exc.param
        if param is None or getattr(param, "param_type_name", "") != "argument":
            if param is None or not param.opts:
                raise
            raise fail(_value_invalid(where, max(param.opts, key=len), "missing", "is required")) from None
        raise fail(_argument_missing(ctx, param)) from None
    except BadParameter as exc:
        if exc.param is None or not exc.param.opts:
            raise
        name = max(exc.param.opts, key=len)
        why = (exc.reason, exc.what) if isinstance(exc, ValueRefused) else ("type", _not_of_type(exc.param, given))
        raise fail(_value_invalid(where, name, *why)) from None
    blank = _blank_argument(ctx)
    if blank is not None:
        raise fail(_argument_missing(ctx, blank, blank=True)) from None
    refused = inherited_options(ctx, leaf=not isinstance(ctx.command, TyperGroup))
    if refused is not None:
        raise fail(refused)
    return rest


def _blank_argument(ctx: Any) -> Any:
    """The first required one-value argument of the command `ctx` runs that was given as "" or spaces
    only (`approvals approve ""`), or None. Such a value named nothing: sent on, it became a path
    with an empty segment (`POST /api/approvals//approve`: "no route") or a lookup of the id ""; it
    is refused as ARGUMENT_MISSING, like the argument left out (trial40, R-7.3). An optional argument
    may be blank on purpose (`resources ""`: every resource)."""
    for param in ctx.command.get_params(ctx):
        if getattr(param, "param_type_name", "") != "argument" or not param.required or param.nargs != 1:
            continue
        value = ctx.params.get(param.name)
        if isinstance(value, str) and not value.strip():
            return param
    return None


def _not_of_type(param: Any, given: list[str]) -> str:
    """What is wrong with the value `given` to option `param`: "was given 'abc', which is not an
    integer" for a number option (a value over `ECHOED_VALUE_CHARS` characters is counted, not
    shown), else "was given a value that is not of its type" (issue 16, R-7.3)."""
    found = wrong_type_value(param, given)
    if found is None:
        return "was given a value that is not of its type"
    value, kind = found
    if len(value) > ECHOED_VALUE_CHARS:
        return f"was given a value of {len(value)} characters that is not {kind}"
    return f"was given {shown(value)!r}, which is not {kind}"


def _argument_missing(ctx: Any, missing: Any, *, blank: bool = False) -> ArgumentMissing:
    """ARGUMENT_MISSING for the argument `missing` of the command `ctx` runs, with its usage line
    (`mcp-center add [OPTIONS] NAME [TARGET]...`: required arguments bare, optional ones in
    brackets, a repeated one followed by `...`); `blank`: it was given, but empty or spaces only
    (the message says so, `details.reason` is `blank`)."""
    where = ctx.command_path
    words = [where, "[OPTIONS]"]
    for param in ctx.command.get_params(ctx):
        if getattr(param, "param_type_name", "") != "argument":
            continue
        word = (param.name or "").upper()
        word = word if param.required else f"[{word}]"
        words.append(f"{word}..." if param.nargs == -1 else word)
    usage = " ".join(words)
    name = (missing.name or "").upper()
    given = " (it was given empty)" if blank else ""
    return ArgumentMissing(
        f"{where} needs {name}{given}; usage: {usage}; see '{where} --help'",
        details={"argument": name, "command": where, "usage": usage, **({"reason": "blank"} if blank else {})},
    )


def _value_invalid(where: str, name: str, reason: str, what: str) -> OptionValueInvalid:
    """OPTION_VALUE_INVALID for option `name` of command `where` (`what` repeats the value given only for
    a number option: `_not_of_type`)."""
    return OptionValueInvalid(
        f"option '{shown(name)}' of {where} {what}; see '{where} --help'",
        details={"option": name[:100], "command": where, "reason": reason},
    )


class CenterCommand(TyperCommand):
    """Every `mcp-center` command: its `--help` shows a flag as `--yes` or `--wait / --no-wait`,
    never with typer's `<bool>` value placeholder (a flag takes no value), and an unknown option is
    `error [OPTION_UNKNOWN]` (`_parsed`). Set on each command by `cli.__init__`."""

    def get_params(self, ctx: Any) -> list[Any]:
        """The command's parameters with `--help` last, flags without a value placeholder."""
        return _untyped_flags(super().get_params(ctx))

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        """click's parsing, an unknown option refused as OPTION_UNKNOWN (see `_parsed`)."""
        return _parsed(super().parse_args, ctx, args)

    def invoke(self, ctx: Any) -> Any:
        """Run the command; an error of ours that its own handling let through (a step outside its
        `try`, such as reading the admin token before asking a serve) prints as `fail` prints it and
        exits with its code, never as a traceback: one handler for every verb (fixb36)."""
        try:
            return super().invoke(ctx)
        except CenterError as exc:
            raise fail(exc) from None


_COMMAND_SYNONYMS: Final = {
    "status": ("list", "show"),
    "ls": ("list",),
    "info": ("show",),
    "get": ("show",),
    "rm": ("delete", "revoke"),
    "remove": ("delete", "revoke"),
    "delete": ("revoke",),
    "new": ("add", "create"),
    "register": ("add",),
    "start": ("serve", "enable"),
    "run": ("serve", "call"),
    "stop": ("disable",),
    "invoke": ("call",),
    "approve": ("approvals",),
    "login": ("auth",),
}
"""Commands other tools have, and ours that do what they do: offered as "did you mean" first."""


class CenterGroup(TyperGroup):
    """`mcp-center` and its command groups (`gateway`, `secret`, ...): flags shown as in `CenterCommand`,
    and an unknown command as `error [COMMAND_UNKNOWN]: ...` with the closest known ones (exit 2),
    not typer's "No such command" box."""

    def get_params(self, ctx: Any) -> list[Any]:
        """The group's parameters with `--help` last, flags without a value placeholder."""
        return _untyped_flags(super().get_params(ctx))

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        """click's parsing, an unknown option refused as OPTION_UNKNOWN (see `_parsed`)."""
        return _parsed(super().parse_args, ctx, args)

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        """The command `args[0]` names, as click resolves it.

        Raises:
            typer.Exit: code 2 after `error [COMMAND_UNKNOWN]: no command 'X' in mcp-center ...`,
                its `did you mean` (the closest of the group's commands) and where to list them.
        """
        name = args[0] if args else ""
        if not args or name.startswith("-") or self.get_command(ctx, name) is not None or ctx.resilient_parsing:
            return super().resolve_command(ctx, args)
        from mcp_center.errors import did_you_mean

        known = [n for n in self.list_commands(ctx) if not getattr(self.get_command(ctx, n), "hidden", False)]
        close = [n for n in _COMMAND_SYNONYMS.get(name.lower(), ()) if n in known] or did_you_mean(name, known)
        where = ctx.command_path
        raise fail(
            CommandUnknown(
                f"no command '{shown(name)}' in {where}; see '{where} --help' for the commands",
                details={"command": name, "did_you_mean": close},
            )
        )


app = typer.Typer(
    cls=CenterGroup,
    name="mcp-center",
    help="A self-hosted MCP host: register, trust, test, enable and call MCP servers.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _print_version(value: bool) -> None:
    if value:
        out.print(__version__)
        raise typer.Exit()


@app.callback()
def _root(
    ctx: typer.Context,
    show_version: Annotated[
        bool, typer.Option("--version", help="Print the version and exit.", callback=_print_version, is_eager=True)
    ] = False,
) -> None:
    """A self-hosted MCP host: register, trust, test, enable and call MCP servers."""
    del show_version
    forget()  # suggested commands carry this command's --data-dir/--url, not a previous one's
    ctx.call_on_close(forget)  # nor does what follows the command in this process (a test, a library caller)


secret_app = typer.Typer(cls=CenterGroup, help="Set or delete secret values (write-only).", no_args_is_help=True)
app.add_typer(secret_app, name="secret")
approvals_app = typer.Typer(
    cls=CenterGroup, help="Agent calls waiting for your decision in a running host: list, approve ID, deny ID."
)
app.add_typer(approvals_app, name="approvals")
gateway_app = typer.Typer(
    cls=CenterGroup,
    help="The MCP gateway agents connect to: run it over stdio, manage its tokens.",
    invoke_without_command=True,
)
app.add_typer(gateway_app, name="gateway")
gateway_token_app = typer.Typer(
    cls=CenterGroup, help="Gateway tokens (what MCP clients present at /mcp).", no_args_is_help=True
)
gateway_app.add_typer(gateway_token_app, name="token")
sandbox_app = typer.Typer(
    cls=CenterGroup, help="Sandboxed stdio servers: check this host, warm up a server's caches.", no_args_is_help=True
)
app.add_typer(sandbox_app, name="sandbox")


class ConsoleOptions(TypedDict):
    """rich Console options of the CLI's consoles (a fork server that rebuilds them uses these too)."""

    soft_wrap: bool
    emoji: bool
    markup: bool


_PICTURES: Final = (
    {code: 0x2400 + code for code in range(0x20) if code not in (0x09, 0x0A)}
    | {0x7F: 0x2421}
    | dict.fromkeys(range(0x80, 0xA0), 0xFFFD)
    # Bidirectional overrides, embeddings and isolates: they reorder what follows on the line, so a
    # name could show text other than what it holds (Trojan Source). Marks (LRM, RLM, ALM) too.
    | dict.fromkeys([*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F, 0x061C], 0xFFFD)
    # Line and paragraph separators: a terminal may break the line there (one line stays one line).
    | {0x2028: 0xFFFD, 0x2029: 0xFFFD}
)


def visible(text: str) -> str:
    """`text` with each control character but tab and newline (ESC, CR, BEL, backspace, C1 codes)
    replaced by one printable character (its Unicode control picture, e.g. ESC as "␛"; C1 codes and
    bidirectional controls as U+FFFD): what a server, a file or a user wrote can neither move the
    cursor, recolour or retitle the terminal, nor reorder the rest of the line (R-5.4)."""
    return text.translate(_PICTURES)


class TextConsole(Console):
    """A rich Console whose text output never carries a control character it was given: every text
    segment passes through `visible` just before rich adds its own styles, so tables, `Text` objects
    and plain strings are all covered, and rich's own control segments (a spinner) are left alone."""

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        return super()._render_buffer(
            segment if segment.control else Segment(visible(segment.text), segment.style) for segment in buffer
        )


CONSOLE_OPTIONS: Final[ConsoleOptions] = {"soft_wrap": True, "emoji": False, "markup": False}
out = TextConsole(**CONSOLE_OPTIONS)
err = TextConsole(stderr=True, **CONSOLE_OPTIONS)
"""How the CLI's two consoles print (CONSOLE_OPTIONS). soft_wrap: long lines are not broken at 80
columns when the output is piped. emoji=False: a path, name or value that contains `:smile:` is printed
as written, and `serve` does not load rich's table of emoji codes (about 0.9 MB of an idle host's
memory, R-8.3). markup=False: text is never read as rich markup — a data directory, a secret key, or a
server's name, error or tool description (untrusted text, R-5.4) that contains `[/red]` used to end
the command in a MarkupError traceback, and `[link=…]` could restyle what the user reads. Colour comes
only from `styled`'s explicit styles."""


def styled(*parts: str | tuple[str, str]) -> Text:
    """One line from plain strings and `(text, style)` pairs, e.g. `styled(("error", "red"), ": ", msg)`;
    no part is ever parsed as markup (see `out`)."""
    return Text.assemble(*parts)


NEXT_STEP: Final[dict[str, tuple[str, str]]] = {
    "MCP_SERVER_NOT_TRUSTED": ("trust", ""),
    "MCP_SERVER_NOT_TESTED": ("test", ""),
    "MCP_SERVER_DISABLED": ("enable", ""),
    "OAUTH_AUTHORIZATION_REQUIRED": ("auth", ""),
    "MCP_SERVER_VERSION_CONFLICT": ("show", "  (then apply your change again)"),
    "MCP_SERVER_ALREADY_REGISTERED": ("show", ""),
}
"""What to run next after a refused step, by error code: the verb (given the server's id, rendered
by `suggested` with this command's `--data-dir`) and what follows the command. When the error's
`details.needs` (the readiness rule's missing steps) starts with another step, that one is next:
a disabled server that is not trusted either is trusted first (`enable` would be refused)."""
_READINESS_VERBS: Final = frozenset({"trust", "test", "enable"})

DataDir = Annotated[
    Path | None,
    typer.Option(
        "--data-dir",
        parser=data_dir_value,
        help="Data directory (default: $MCP_CENTER_DATA_DIR or the user data dir).",
    ),
]
ProfileOpt = Annotated[str | None, typer.Option("--profile", help="local (default) or production.")]
JsonOut = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]
DatabaseUrl = Annotated[
    str | None,
    typer.Option(
        "--database-url",
        help="postgresql://user:password@host:port/db: keep the shared state there (default: "
        "$MCP_CENTER_DATABASE_URL, else the data directory's files).",
    ),
]


def settings_for(data_dir: Path | None, profile: str | None = None) -> Settings:
    """The settings of a command (`--data-dir`, `--profile`, then the environment).

    Raises:
        typer.Exit: a bad option or `MCP_CENTER_*` setting, printed as `error [REQUEST_INVALID]`
            with the field (exit 2), never a traceback (R-7.3).
    """
    try:
        settings = Settings.load(data_dir=data_dir, profile=profile)
    except CenterError as exc:
        raise fail(exc) from None
    remember(settings)
    return settings


def refuse_files_of_a_database_serve(settings: Settings) -> None:
    """Refuse to open the data directory's files when the live serve that owns it keeps its state
    in a shared database (its `serve.json` names one) and this command was given none (R-9.2, R-10.1).

    Such a directory has no servers in its files: reading them would show an empty host, and
    opening them would create a key and `mcp/` in a directory this command does not own.

    Raises:
        typer.Exit: code 4, `STORAGE_DATABASE_REQUIRED` naming the serve and the database (never
            its password) and what to set; also when no serve runs but the directory's
            `database.json` says a database-backed one did (`store.owner.database_of`); nothing was
            read or written.
    """
    if settings.database_url:
        return
    from mcp_center.store.owner import database_of, database_required
    from mcp_center.store.running import running_owner

    owner = running_owner(settings.data_dir)
    if owner is not None and owner.database is not None:
        raise fail(database_required(settings.data_dir, owner.database, owner.pid))
    marked = database_of(settings.data_dir) if owner is None else None
    if marked is not None:
        raise fail(database_required(settings.data_dir, marked))


def has_state(settings: Settings) -> bool:
    """True when there is state to read: a database, or the data directory's `mcp/` (R-9.2).

    Read-only commands ask this first and show "nothing yet" otherwise: opening a store or the
    center would create the directory, its key and `mcp/` (read-only commands never create state).

    Raises:
        typer.Exit: the directory's serve is database-backed and no database was given
            (`refuse_files_of_a_database_serve`).
    """
    refuse_files_of_a_database_serve(settings)
    return settings.database_url is not None or settings.mcp_dir.exists()


@contextmanager
def opened_store(settings: Settings) -> Generator[Store]:
    """The store of `settings` (files, or the database of `MCP_CENTER_DATABASE_URL`), open for the block.

    Raises:
        typer.Exit: the directory's serve is database-backed and no database was given
            (`refuse_files_of_a_database_serve`).
        SecretKeyMismatch: the secret key does not open what is stored (`master_key.checked_key`).
    """
    from mcp_center.service.master_key import checked_key
    from mcp_center.store import store_for

    refuse_files_of_a_database_serve(settings)
    store = store_for(settings)
    store.open()
    try:
        checked_key(settings, store)  # the secret key that opens what is stored (fix37)
        yield store
    finally:
        store.close()


def settings_for_server(server_id: str, data_dir: Path | None, profile: str | None = None) -> Settings:
    """`settings_for` of a command about an existing server (R-9.2).

    Raises:
        typer.Exit: a bad setting (exit 2), or the data directory holds no servers (no `mcp/`: exit 3,
            the server's not-found error naming where it looked): such a command never creates the
            directory or its key; or its serve is database-backed and no database was given (exit 4).
    """
    settings = settings_for(data_dir, profile)
    if not has_state(settings):
        raise fail(
            ServerNotFound(f"no server with id '{server_id}'", details={"server_id": server_id}), settings=settings
        )
    return settings


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
MAX_SHOWN_CHARS = 500
"""Longest message part an error line shows whole (characters); past it, the count of the rest."""


def _escaped(text: str) -> str:
    """`text` with each control character as `\\xNN`."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def shown(text: str) -> str:
    """`text` safe to print on a terminal in one line: control characters (ESC sequences that would
    recolour or rewrite the terminal, line breaks) as `\\xNN`, and clipped past `MAX_SHOWN_CHARS`
    with the count of what was left out. For echoed user input: a bad id, name or path (R-7.3)."""
    visible = _escaped(text)
    if len(visible) <= MAX_SHOWN_CHARS:
        return visible
    return f"{visible[:MAX_SHOWN_CHARS]}... ({len(visible) - MAX_SHOWN_CHARS} more characters)"


MAX_MESSAGE_CHARS = 1000
"""Longest error message an error line shows whole (characters). Our messages are composed (what a
server or a user wrote in them is already clipped), and their end often says what to do next (the
log command): a longer one loses its middle, never its end."""
_MESSAGE_TAIL_CHARS = 300


def shown_message(text: str) -> str:
    """An error's `message` as `shown` makes it safe, but clipped in the middle past
    `MAX_MESSAGE_CHARS` (the count of what was left out in its place), so that its last
    `_MESSAGE_TAIL_CHARS` characters, the next step, are always printed (R-7.3)."""
    visible = _escaped(text)
    if len(visible) <= MAX_MESSAGE_CHARS:
        return visible
    head = MAX_MESSAGE_CHARS - _MESSAGE_TAIL_CHARS
    left_out = len(visible) - MAX_MESSAGE_CHARS
    return f"{visible[:head]}... ({left_out} more characters) ...{visible[-_MESSAGE_TAIL_CHARS:]}"


def fail(
    exc: CenterError, server_id: str | None = None, *, settings: Settings | None = None, serve: bool = False
) -> typer.Exit:
    """Print `exc` (code, message, field errors, stderr tail, next step) and return the exit to raise.

    With `settings`, a not-found error also names the data directory it looked in; with `serve`,
    say whether a serve owns that directory (for errors about reaching the running host). A
    `HostRequestFailed` (the running serve's error answer) prints as the same error raised here
    would: the serve's code, its next step, and the exit code of that code (`host.exit_code_for`,
    cli39)."""
    code = exc.api_code if isinstance(exc, HostRequestFailed) else exc.code
    _point_at_logs(exc)
    listed: object = exc.details.get("errors")
    fields = [item for item in (listed if is_array(listed) else []) if is_object(item) and "field" in item]
    line = Text("error", style="red")
    line.append(f" [{code}]: {shown_message(exc.message)}", style="")
    for item in fields:  # a field error the message already states adds only its code to that line
        if f"{item['field']}: {item.get('message', '')}" == exc.message and item.get("code") != code:
            line.append(f" [{item.get('code', '')}]", style="")
    err.print(line, highlight=False)
    for item in fields:
        if f"{item['field']}: {item.get('message', '')}" != exc.message:
            err.print(
                shown(f"  - {item['field']}: {item.get('message', '')} [{item.get('code', '')}]"),
                highlight=False,
                markup=False,
            )
    print_stderr_tail(exc.details)
    _print_did_you_mean(exc.details)
    server = server_id or exc.details.get("server_id")
    hint = NEXT_STEP.get(code)
    if hint and isinstance(server, str):
        verb, after = hint
        needs: object = exc.details.get("needs")
        if is_array(needs) and needs and needs[0] in _READINESS_VERBS:  # the readiness rule's first step
            verb = str(needs[0])
        err.print(f"  next: {suggested(verb, server)}{after}", highlight=False, markup=False)
    not_found = isinstance(exc, NotFound) or (isinstance(exc, HostRequestFailed) and exc.status == 404)
    if settings is not None and not_found:
        err.print(
            f"  looked in {data_dir_phrase(settings)}; use --data-dir or MCP_CENTER_DATA_DIR for another",
            highlight=False,
            markup=False,
        )
    if settings is not None and serve:
        err.print(
            f"  {serve_state(settings, settle=exc.details.get('reason') == 'dropped')}", highlight=False, markup=False
        )
    if isinstance(exc, HostRequestFailed):
        from mcp_center.cli.host import exit_code_for

        return typer.Exit(exit_code_for(exc.api_code, exc.status))
    return typer.Exit(exc.exit_code)


def _point_at_logs(exc: CenterError) -> None:
    """Give the log command an error names (`details.log_command`, the runtime's `mcp-center logs ID`)
    this command's `--data-dir` (and `--url`), shell-quoted (`suggested`), in the message too: the
    command must work as printed (fix37, R-7.3)."""
    command = exc.details.get("log_command")
    if not isinstance(command, str):
        return
    words = shlex.split(command)[1:]
    better = suggested(*words)
    if better != command:  # a command with quoted words is not quoted again: it is copied as printed
        exc.message = exc.message.replace(f"'{command}'", better if "'" in better else f"'{better}'")
        exc.details["log_command"] = better


def _print_did_you_mean(details: Mapping[str, Any]) -> None:
    close = details.get("did_you_mean")
    if is_array(close) and close:
        err.print(shown(f"  did you mean: {', '.join(str(c) for c in close)}?"), highlight=False, markup=False)


def fail_host(exc: HostRequestFailed) -> typer.Exit:
    """Print the running host's error answer (`error [CODE]: message`, and its did-you-mean, as
    `fail` prints a local one: `logs tiem` names `time` as `show tiem` does, issue 16) and return the
    exit to raise, by the answer's code (`host.exit_code_for`)."""
    from mcp_center.cli.host import exit_code_for

    _point_at_logs(exc)
    line = Text("error", style="red")
    line.append(f" [{exc.api_code}]: {shown_message(exc.message)}", style="")
    err.print(line, highlight=False)
    _print_did_you_mean(exc.details)
    return typer.Exit(exit_code_for(exc.api_code, exc.status))


def run_center(settings: Settings, action: Callable[[McpCenter], Awaitable[T]]) -> T:
    """Open the center (no start-up connections), run `action`, close everything.

    Opening creates the data directory (and its key) if it is missing: commands about existing
    servers get their settings from `settings_for_server`, read-only ones ask `has_state` first. A
    data directory whose live serve is database-backed is never opened without that database
    (`refuse_files_of_a_database_serve`, exit 4). The service (and with it the runtime and
    the MCP SDK) is imported here, by the commands that run the host in-process, not by the CLI's
    start-up."""
    import anyio

    from mcp_center.secrets import install_log_redaction
    from mcp_center.service import McpCenter

    refuse_files_of_a_database_serve(settings)
    install_log_redaction()

    async def main() -> T:
        # A one-shot command cannot show a form: it advertises no elicitation (R-6; a server that
        # needs an answer gets "not supported" — use the API or settings page of a running host).
        async with McpCenter.open(settings, connect=False, elicitation=False) as center:
            return await action(center)

    try:
        return anyio.run(main)
    except CenterError as exc:
        raise fail(exc, settings=settings) from None


def run_center_reading(settings: Settings, action: Callable[[McpCenter], Awaitable[T]]) -> T:
    """`run_center` for a step that writes nothing (an export, an import's preview): on a data
    directory with no state yet it runs on an empty host in a throw-away directory, so a refused,
    dry-run or read-only command never creates the directory, its key or `mcp/` (R-9.2, issue 16).

    Raises:
        typer.Exit: as `run_center`.
    """
    if has_state(settings):
        return run_center(settings, action)
    import tempfile
    from dataclasses import replace

    with tempfile.TemporaryDirectory(prefix="mcp-center-empty-") as empty:
        return run_center(replace(settings, data_dir=Path(empty)), action)


def print_json(value: Any) -> None:
    out.print_json(json.dumps(value, default=str))


def cells(*values: str) -> list[Text]:
    """Table cells as plain text: names and values from an imported file are never rich markup."""
    return [Text(value) for value in values]


HostUrl = Annotated[
    str | None,
    typer.Option(
        "--url",
        envvar="MCP_CENTER_URL",
        help="The running host (default: the serve of the data directory, from its serve.json).",
    ),
]


def host_request(settings: Settings, url: str | None, method: str, path: str, body: object = None) -> Any:
    """Call the REST API of the running host that owns this data directory (`host.HostClient`).

    An error is printed (`error [CODE]: message`, and what to do) and becomes the exit to raise:
    the host's errors exit by their HTTP status (`host.exit_code_for_status`). A `GET` waits
    `host.ANSWER_TIMEOUT_S` for the answer (MCP_SERVER_UNREACHABLE, exit 7, after it), a change
    the client's default.
    """
    from mcp_center.cli import host

    remember(url=url)
    try:
        timeout_s = host.ANSWER_TIMEOUT_S if method == "GET" else 30.0
        with host.HostClient(settings, url, timeout_s=timeout_s) as client:
            return client.call(method, path, body)
    except HostRequestFailed as exc:
        raise fail_host(exc) from None
    except CenterError as exc:
        raise fail(exc) from None


def print_stderr_tail(details: Mapping[str, Any], rest: str | None = None) -> None:
    """Print an error's `stderr_tail` (a stdio server's last lines, redacted, R-3.1) under a header
    that says how many of how many lines they are; `rest`, printed after them when some were left
    out (`details.stderr_lines`), says where to see the others (issue 16)."""
    tail = details.get("stderr_tail")
    if not is_array(tail) or not tail:
        return
    total = details.get("stderr_lines")
    more = isinstance(total, int) and total > len(tail)
    err.print(f"  server stderr (last {len(tail)} of {total} lines):" if more else "  server stderr:", highlight=False)
    for stderr_line in tail:
        err.print(f"    {stderr_line}", highlight=False, markup=False)
    if more and rest is not None:
        err.print(f"  {rest}", highlight=False, markup=False)


def yes(value: object) -> str:
    """`yes` or `no` for a table cell."""
    return "yes" if value else "no"
