"""`mcp-center import` and `export`: client configuration files in and out (R-1.8 to R-1.10)."""

from __future__ import annotations

import errno
import json
import os
import sys
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.segment import Segment
from rich.table import Table

from mcp_center.cli._clip import clip
from mcp_center.cli._prompts import ask, confirm
from mcp_center.cli._shared import (
    DataDir,
    JsonOut,
    ProfileOpt,
    app,
    cells,
    err,
    fail,
    out,
    print_json,
    run_center,
    run_center_reading,
    settings_for,
    shown,
    yes,
)
from mcp_center.cli._suggest import suggested
from mcp_center.cli._values import check_known, given_values, missing_for_yes
from mcp_center.cli._where import data_dir_phrase, serve_state
from mcp_center.cli._wording import option_value_refused
from mcp_center.errors import (
    CenterError,
    ImportEmpty,
    ImportFileNotFound,
    ImportFileUnreadable,
    ImportNothingToApply,
    ImportTooLarge,
)
from mcp_center.interchange import (
    EXPORT_FORMATS,
    IMPORT_FORMATS,
    MAX_IMPORT_BYTES,
    decode_text,
    format_named,
    loads_lenient,
)
from mcp_center.store.running import running_owner


@app.command("import")
def import_(
    file: Annotated[
        str, typer.Argument(help="A client configuration file (.mcp.json, mcp.json, ...), or - for stdin.")
    ],
    format: Annotated[str, typer.Option("--format", help=", ".join(IMPORT_FORMATS) + ".")] = "auto",
    var: Annotated[
        list[str] | None,
        typer.Option(
            "--var",
            help="NAME=VALUE: a variable's value, not asked (repeatable). A secret here is in your shell "
            "history and the process list: use --var-from-env for secrets.",
        ),
    ] = None,
    var_from_env: Annotated[
        list[str] | None,
        typer.Option(
            "--var-from-env",
            help="NAME=ENVVAR: a variable's value read from the environment variable ENVVAR, not asked "
            "(repeatable); the value stays off the command line.",
        ),
    ] = None,
    yes: Annotated[
        bool,
        typer.Option(
            "--yes",
            "-y",
            help="Apply without asking: a variable not given with --var/--var-from-env takes the file's "
            "default; one without a default is refused (nothing imported).",
        ),
    ] = False,
    on_conflict: Annotated[
        str,
        typer.Option(
            "--on-conflict",
            help="An entry whose name a server here already has, with another definition: refuse (default: "
            "nothing is imported), skip it, or rename (add it again as NAME-2). Identical ones are skipped.",
        ),
    ] = "refuse",
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show the preview and stop.")] = False,
    as_json: JsonOut = False,
    data_dir: DataDir = None,
    profile: ProfileOpt = None,
) -> None:
    """Import the servers of a Claude Code, Claude Desktop, Cursor, VS Code or Windsurf file.

    Shows the preview (ids, transports, secrets, variables, rejected entries), asks for each
    variable's value (hidden for secrets; a file default is used only if you accept it), asks
    before applying, and creates every server or none. Imported servers start untrusted and
    disabled: trust, test and enable each one.

    In a script: give values with --var NAME=VALUE or --var-from-env NAME=ENVVAR, and --yes to
    take the file's defaults for the rest and apply without asking.

    Importing the same file again is safe: servers already here with the same definition are
    skipped as unchanged, and one whose definition differs stops the import (--on-conflict).
    """
    from mcp_center.interchange import ON_CONFLICT  # here: it loads the import plan's modules
    from mcp_center.service import ApplyRequest, Importer, ImportPreviews
    from mcp_center.service.imports import conflict_error

    for option, value, allowed in (("--format", format, IMPORT_FORMATS), ("--on-conflict", on_conflict, ON_CONFLICT)):
        if value not in allowed:
            what = "must be one of: " + ", ".join(allowed)
            raise fail(option_value_refused("mcp-center import", option, what, given=value, allowed=allowed))
    given = given_values(var or [], var_from_env or [])
    settings = settings_for(data_dir, profile)
    text = _read_import(file)
    if format == "auto" and file != "-":
        format = _named_format(file, text)
    previews = ImportPreviews()
    # The preview writes nothing: on a directory that does not exist yet it runs on an empty host,
    # and only the apply creates the directory and its key, so a refused or dry-run import of a
    # mistyped --data-dir leaves nothing behind (issue 16, R-9.2).
    planned = run_center_reading(settings, lambda c: Importer(c, previews).preview(text, format, on_conflict))
    preview = planned.to_dict()
    variables: list[dict[str, Any]] = preview["variables"]
    # A refusal leads with its error line: the values given are checked before the preview is shown
    # (its tables buried the one line that said what to fix; the line names the variables itself).
    conflict = conflict_error(planned.plan)
    if conflict is not None and not dry_run:
        raise fail(conflict)
    # A value for an entry already here is not unknown: a script re-importing with the same --var works.
    check_known(given, variables, also=[name for e in preview["existing"] for name in e["variables"]])
    applying = not dry_run and bool(preview["servers"])
    use_defaults = missing_for_yes(given, variables) if yes and applying else []
    if as_json:
        print_json({k: v for k, v in preview.items() if k != "token"})
    else:
        _print_preview(preview, given.sources)
    if dry_run:
        if not as_json:
            out.print(f"dry run: nothing created in {data_dir_phrase(settings)}", markup=False, highlight=False)
        return
    if not preview["servers"] and preview["existing"]:  # a re-import: nothing new, nothing wrong
        out.print(
            f"nothing to import into {data_dir_phrase(settings)}: {_existing_phrase(preview['existing'])}",
            markup=False,
            highlight=False,
        )
        _print_secrets_not_updated(preview["existing"])
        return
    if not preview["servers"]:  # after the preview: its rejected entries say why
        raise fail(ImportNothingToApply("nothing to import: every entry was rejected"))
    # Values for entries already registered go too: the service accepts and ignores them (one rule).
    if yes:
        values = dict(given.values)
    else:
        asked, use_defaults = _ask_values([v for v in variables if v["name"] not in given.values])
        values = {**given.values, **asked}
    count = len(preview["servers"])
    if not yes and not confirm(f"Import {count} server{'s' if count != 1 else ''}?"):
        err.print("not imported; nothing changed", markup=False, highlight=False)
        raise typer.Exit(1)
    request = ApplyRequest(preview["token"], preview["digest"], text, format, values, tuple(use_defaults), on_conflict)
    created = run_center(settings, lambda c: Importer(c, previews).apply(request))
    ids = [view.id for view in created]
    out.print(
        f"imported {len(ids)} (untrusted, disabled) into {data_dir_phrase(settings)}: {', '.join(ids)}; "
        f"next: {suggested('trust', ids[0])}",
        markup=False,
        highlight=False,
    )
    if preview["existing"]:
        out.print(f"not imported again: {_existing_phrase(preview['existing'])}", markup=False, highlight=False)
        _print_secrets_not_updated(preview["existing"])


_SECRET_SET_KIND = {"env": "environment", "header": "header", "bearer": "bearer"}


def _print_secrets_not_updated(existing: list[dict[str, Any]]) -> None:
    """Say, per entry already here, that the file's secret values were NOT applied and how to change
    them: secret values are write-only, so a re-import never compares nor updates them (R-1.5, R-1.8)."""
    for e in existing:
        kept = e["secrets_not_updated"]
        if kept:
            keys = ", ".join(s["key"] for s in kept)
            first = kept[0]
            out.print(
                f"{e['server_id']}: secret values NOT updated ({keys}): the stored ones stay; to change one: "
                + suggested("secret", "set", e["server_id"], first["key"], "--kind", _SECRET_SET_KIND[first["kind"]]),
                markup=False,
                highlight=False,
            )


def _existing_phrase(existing: list[dict[str, Any]]) -> str:
    """`2 already here, unchanged (time, gh); 1 skipped, differs (docs: url)`: the entries servers here
    already have (`ImportPreview.to_dict()["existing"]`), by outcome; a conflict stops the import first."""
    parts: list[str] = []
    for outcome, label in (("unchanged", "already here, unchanged"), ("skipped", "skipped, differs")):
        items = [e for e in existing if e["outcome"] == outcome]
        if items:
            shown = ", ".join(e["server_id"] + (f": {', '.join(e['fields'])}" if e["fields"] else "") for e in items)
            parts.append(f"{len(items)} {label} ({shown})")
    return "; ".join(parts)


def _read_import(file: str) -> str:
    """The text of an import file (or stdin): at most `MAX_IMPORT_BYTES` + 1 bytes are ever read, so
    a file whose size cannot be trusted (/dev/zero, a /proc file, a pipe, a file still growing) is
    refused with IMPORT_TOO_LARGE instead of being read until memory runs out (R-1.8). An empty
    `file` never gets here: the CLI refuses it as ARGUMENT_MISSING (`cli._shared._blank_argument`)."""
    try:
        if file == "-":
            data = sys.stdin.buffer.read(MAX_IMPORT_BYTES + 1)
        else:
            path = Path(file)
            size = path.stat().st_size
            if size > MAX_IMPORT_BYTES:
                raise fail(_too_large(file, size))
            with path.open("rb") as handle:
                data = handle.read(MAX_IMPORT_BYTES + 1)
            if len(data) > MAX_IMPORT_BYTES:
                raise fail(_too_large(file, None))
        text = decode_text(data)
    except OSError as exc:
        raise fail(_unreadable(file, exc)) from None
    except CenterError as exc:
        raise fail(exc) from None
    if not text.removeprefix("\ufeff").strip():
        what = "standard input is empty" if file == "-" else f"the file {file!r} is empty"
        raise fail(
            ImportEmpty(
                f"{what}: nothing to import (give a client's configuration file, or pipe one to 'import -')",
                details={"reason": "empty"},
            )
        )
    return text


def _unreadable(file: str, exc: OSError) -> CenterError:
    """IMPORT_FILE_NOT_FOUND (exit 3) or IMPORT_FILE_UNREADABLE (exit 2) for a file `import` cannot read,
    naming it as given and, when that was relative, where it was looked for (R-1.8, R-7.3)."""
    path = os.path.abspath(file)
    shown = repr(file) if path == file else f"{file!r} ({path})"
    details: dict[str, object] = {"file": file, "path": path}
    if isinstance(exc, FileNotFoundError):
        return ImportFileNotFound(f"no file {shown} to import: it does not exist", details=details)
    details["errno"] = errno.errorcode.get(exc.errno, "") if exc.errno is not None else ""
    return ImportFileUnreadable(f"cannot read the file {shown} to import: {exc.strerror or exc}", details=details)


def _named_format(file: str, text: str) -> str:
    """The dialect `file`'s name says when its content has that shape (`.mcp.json`: claude-code), else
    `auto`; a text that does not parse is left to the preview to report (R-1.8)."""
    try:
        return format_named(file, loads_lenient(text))
    except CenterError:
        return "auto"


def _too_large(file: str, size: int | None) -> ImportTooLarge:
    measured = f"is {size} bytes" if size is not None else f"has more than {MAX_IMPORT_BYTES} bytes"
    return ImportTooLarge(
        f"{file} {measured}; the limit is {MAX_IMPORT_BYTES} bytes (1 MiB)",
        details={"limit_bytes": MAX_IMPORT_BYTES, "size_bytes": size},
    )


def _print_preview(preview: dict[str, Any], given: Mapping[str, str]) -> None:
    out.print(f"format: {preview['format']}", markup=False, highlight=False)
    if preview["servers"]:
        _print_servers(preview["servers"])
        for s in preview["servers"]:  # a note too short to say what to do instead (issue 16)
            for w in s["warnings"]:
                if w["code"] == "PACKAGE_NOT_PINNED":
                    out.print(shown(f"warning [{w['code']}] {s['id']}: {w['message']}"), markup=False, highlight=False)
                elif "did you mean" in w["message"]:  # a typo'd key (`argz`): the table shows only its code
                    line = f"warning [{w['code']}] {s['id']}: '{w['field']}' {w['message']}"
                    out.print(shown(line), markup=False, highlight=False)
    if preview["variables"]:
        title = "values to supply" if given else "values you will be asked for"
        table = Table("variable", "kind", "secret", "default", "used in", title=title)
        if given:
            table.add_column("given")  # --var, or $ENVVAR: where the value comes from, never the value
        for v in preview["variables"]:
            default = "(hidden)" if v["secret"] and v["has_default"] else (v["default"] if v["has_default"] else "-")
            used = ", ".join(f"{u['server']}.{u['field']}" for u in v["used_in"])
            row = [v["name"], v["kind"], yes(v["secret"]), str(default), used]
            table.add_row(*cells(*row, *([given.get(v["name"], "-")] if given else [])))
        out.print(table)
    if preview["existing"]:
        table = Table("name", "server", "outcome", "differs in", title="already here (not created again)")
        for e in preview["existing"]:
            table.add_row(*cells(e["name"], e["server_id"], e["outcome"], ", ".join(e["fields"]) or "-"))
        out.print(table)
    if preview["rejected"]:
        table = Table("name", "source", "why", title="rejected")
        for r in preview["rejected"]:
            why = "\n".join(f"{e['code']}: {e['field'] or 'entry'} {e['message']}" for e in r["errors"])
            table.add_row(*cells(r["name"], r["source"], why))
        out.print(table)


def _print_servers(servers: list[dict[str, Any]]) -> None:
    """The "will be created" table. A stable code is read whole: the notes column is never narrower than
    its longest code, and when that does not fit the terminal (a long id beside it at 80 columns, where
    rich folded PACKAGE_NOT_PINNED into "PACKAG E_NOT_ PINNED"), the notes are lines under the table."""
    rows: list[tuple[list[str], list[str]]] = []
    for s in servers:
        config = s["config"]
        target = config.get("url") or " ".join([config.get("command", ""), *config.get("args", [])])
        notes = [f"id taken ({s['clash']['with']}): renamed from {s['clash']['slug']}"] if s["clash"] else []
        notes += [f"{w['field']}: {w['code']}" for w in s["warnings"]]
        secrets = [f"{x['kind']} {x['key']} ({x['value']})" for x in s["secrets"]]
        rows.append(([s["id"], s["name"], s["transport"], clip(target, 70), "\n".join(secrets)], notes))
    longest = max((len(w["code"]) for s in servers for w in s["warnings"]), default=0)

    def table(with_notes: bool) -> Table:
        made = Table("id", "name", "transport", "target", "secrets", title="will be created")
        made.columns[0].no_wrap = True  # a renamed id ("x-2") must be read whole
        for column in made.columns[1:]:
            column.overflow = "fold"
        if with_notes:
            made.add_column("notes", overflow="fold", min_width=min(longest, 32) or None)
        for cols, notes in rows:
            made.add_row(*cells(*cols, *(["\n".join(notes)] if with_notes else [])))
        return made

    wide = table(with_notes=True)
    # Rich lets columns it cannot shrink run past the width: lay it out to see whether it fits.
    lines = Segment.split_lines(out.render(wide, out.options))  # not cropped, unlike `render_lines`
    if max((Segment.get_line_length(line) for line in lines), default=0) <= out.width:
        out.print(wide)
        return
    out.print(table(with_notes=False))
    for (_, notes), s in zip(rows, servers, strict=True):
        for note in notes:
            out.print(shown(f"note {s['id']}: {note}"), markup=False, highlight=False)


def _ask_values(variables: list[dict[str, Any]]) -> tuple[dict[str, str], list[str]]:
    """Ask for every variable: hidden input for secrets; a default only when the user accepts it.

    Raises:
        typer.Exit: code 2 (ANSWER_REQUIRED or CONFIRMATION_REQUIRED) when standard input gives no
            answer (closed, at its end: a script, or the file itself read from stdin); nothing changed.
    """
    instead = (
        "run import in a terminal to be asked for each variable's value, or give it with "
        "--var NAME=VALUE or --var-from-env NAME=ENVVAR"
    )
    values: dict[str, str] = {}
    use_defaults: list[str] = []
    for v in variables:
        name = v["name"]
        label = f"{name}" + (f" ({v['description']})" if v["description"] else "")
        if v["secret"]:
            if v["has_default"]:
                value = ask(
                    f"{label} [secret; Enter for the file's default]", instead=instead, default="", hide_input=True
                )
                if value:
                    values[name] = value
                elif confirm(f"Use the default for {name} from the file?", instead=instead):
                    use_defaults.append(name)
                else:
                    values[name] = ask(f"{label} [secret]", instead=instead, hide_input=True)
            else:
                values[name] = ask(f"{label} [secret]", instead=instead, hide_input=True)
        elif v["has_default"]:
            value = ask(label, instead=instead, default=v["default"])
            if value == v["default"]:
                use_defaults.append(name)
            else:
                values[name] = value
        else:
            values[name] = ask(label, instead=instead)
    return values, use_defaults


@app.command()
def export(
    format: Annotated[str, typer.Option("--format", help=", ".join(EXPORT_FORMATS) + ".")],
    gateway: Annotated[
        bool, typer.Option("--gateway", help="Print the snippet that points the client at this host's gateway instead.")
    ] = False,
    data_dir: DataDir = None,
    profile: ProfileOpt = None,
) -> None:
    """Print the servers as a client configuration, secrets as placeholders.

    The JSON goes to stdout (redirect it into the client's file); the placeholders to set and
    what could not be expressed go to stderr.
    """
    from mcp_center.service import Importer, ImportPreviews

    if format not in EXPORT_FORMATS:  # as import's --format: before anything is opened (fix37)
        what = "must be one of: " + ", ".join(EXPORT_FORMATS)
        raise fail(option_value_refused("mcp-center export", "--format", what, given=format, allowed=EXPORT_FORMATS))
    settings = settings_for(data_dir, profile)
    owner = running_owner(settings.data_dir)
    if settings.public_url is None and owner is not None and owner.url:
        # The snippet is for MCP clients, possibly on other machines: the serve's public URL when it
        # has one (`url` in serve.json), not the listen address the CLI itself uses.
        settings = replace(settings, public_url=owner.url)
    # Nothing registered yet: an empty host's export, without creating the directory.
    document = run_center_reading(settings, lambda c: Importer(c, ImportPreviews()).export(format)).to_dict()
    print(json.dumps(document["gateway"]["config"] if gateway else document["config"], indent=2))
    if gateway:
        err.print(
            f"gateway: {document['gateway']['url']}; set MCP_CENTER_GATEWAY_TOKEN to a gateway token",
            markup=False,
            highlight=False,
        )
        if running_owner(settings.data_dir) is None and settings.public_url is None:
            err.print(  # not "the default address" bare: no serve answers there yet (cli36)
                f"  {serve_state(settings)}: this is the address a serve of this data directory "
                "would use by default; the serve you start may listen elsewhere (its --port, --host or "
                "--public-url): export again once it runs",
                markup=False,
                highlight=False,
            )
        return
    # One sentence, also with nothing to fill in (a bare "for .mcp.json" read as a cut-off line).
    target = document["filename"]
    if document["placeholders"]:
        err.print(
            f"the configuration above is for {target}; the secret values are not exported, set these placeholders:",
            markup=False,
            highlight=False,
        )
    else:
        err.print(
            f"the configuration above is for {target} (redirect it there); it holds no secret to fill in",
            markup=False,
            highlight=False,
        )
    for item in document["placeholders"]:
        err.print(
            f"  set {item['name']}: {item['server_id']} secret {item['kind']} {item['key']}",
            markup=False,
            highlight=False,
        )
    for note in document["notes"]:
        err.print(
            f"  {note['server_id']}.{note['field']} [{note['code']}]: {note['message']}",
            markup=False,
            highlight=False,
        )
