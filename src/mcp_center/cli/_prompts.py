"""Questions the CLI asks on the terminal: `confirm` (yes/no) and `ask` (a value, maybe hidden), each
one error line with a stable code when no answer can come (R-7.3). Split from `cli/_shared.py`."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import typer

from mcp_center.cli._shared import fail, out
from mcp_center.errors import AnswerRequired, CenterError, ConfirmationRequired, FieldError, RequestInvalid

__all__ = ["ask", "confirm"]

T = TypeVar("T")


def confirm(question: str, *, instead: str = "pass --yes to confirm without asking") -> bool:
    """Ask a yes/no `question` on the terminal (default no). `instead` ends the error's message: how
    to go on without being asked.

    The prompt line always ends with a newline: when standard input is not a terminal, the answer
    read from it is not echoed, and what is printed next would otherwise continue the prompt's line.

    Returns:
        True for yes, False for no (an empty answer is no).
    Raises:
        typer.Exit: code 2 (`CONFIRMATION_REQUIRED`, printed as one line that names `--yes`) when no
            answer can come: standard input closed or at its end (a script, CI), unreadable, or
            Ctrl-C. Nothing changed (R-7.3; click's bare "Aborted." and a traceback for a closed
            standard input named neither). The line names `instead`.
    """
    unanswerable = ConfirmationRequired(
        f"no answer (standard input is closed or was interrupted): nothing changed; {instead}",
        details={"question": question},
    )
    return _answered(lambda: typer.confirm(question), unanswerable)


def ask(question: str, *, instead: str, hide_input: bool = False, default: str | None = None) -> str:
    """Ask for a value on the terminal: an import variable, a pasted URL, a secret (`hide_input`).

    Like `confirm`, the prompt's line always ends, and a question no answer can come to is one error
    line instead of click's bare "Aborted." (R-7.3).

    Args:
        question: The prompt, without a trailing colon.
        instead: How to give the value without being asked, for the error (e.g. "pipe the value on
            standard input"); it ends the message after "nothing changed; ".
        hide_input: Do not echo what is typed (secrets).
        default: Returned for an empty answer; None asks again until something is typed.
    Returns:
        The answer as typed (or `default`).
    Raises:
        typer.Exit: code 2 (`ANSWER_REQUIRED`) when standard input is closed, at its end, unreadable,
            or Ctrl-C; code 2 (`REQUEST_INVALID`, field error TEXT_INVALID) when the answer is not
            UTF-8 text. Nothing changed.
    """
    unanswerable = AnswerRequired(
        f"no answer (standard input is closed or was interrupted): nothing changed; {instead}",
        details={"question": question},
    )
    if hide_input and not _stdin_is_a_terminal():
        answer = _answered(lambda: _piped_line(question, default), unanswerable)
    elif default is None:
        answer = _answered(lambda: str(typer.prompt(question, hide_input=hide_input)), unanswerable)
    else:
        answer = _answered(
            lambda: str(typer.prompt(question, default=default, hide_input=hide_input, show_default=not hide_input)),
            unanswerable,
        )
    try:
        answer.encode("utf-8")
    except UnicodeEncodeError:  # bytes that are not UTF-8, kept as lone surrogates by the stdin decoder
        error = FieldError("answer", "TEXT_INVALID", "is not UTF-8 text")
        raise fail(
            RequestInvalid("the answer is not UTF-8 text: nothing changed", details={"errors": [error.to_dict()]})
        ) from None
    return answer


def _stdin_is_a_terminal() -> bool:
    import sys

    stdin = sys.stdin
    try:
        return stdin is not None and not stdin.closed and stdin.isatty()  # pyright: ignore[reportUnnecessaryComparison]
    except (OSError, ValueError):
        return False


def _piped_line(question: str, default: str | None) -> str:
    """A hidden question's answer from standard input that is not a terminal: its next line.

    click hides input with `getpass`, which on a pipe warns (`GetPassWarning: Can not control echo
    on the terminal`) before reading it; a pipe echoes nothing, so the line is read directly. The
    prompt is printed as click prints it; an empty line is `default`, or (no default) asks again.

    Raises:
        EOFError: standard input is at its end (`_answered` makes it ANSWER_REQUIRED).
    """
    import sys

    while True:
        typer.echo(f"{question}: ", nl=False)
        line = sys.stdin.readline()
        if not line:
            raise EOFError
        answer = line.rstrip("\r\n")
        if answer:
            return answer
        if default is not None:
            return default


def _answered(prompt: Callable[[], T], unanswerable: CenterError) -> T:
    """The answer `prompt` reads from standard input, or `unanswerable` printed and exit 2 when none
    can come (closed, at its end, unreadable, Ctrl-C); the prompt's line is always ended."""
    import sys

    stdin = sys.stdin
    if stdin is None or stdin.closed:  # pyright: ignore[reportUnnecessaryComparison]
        raise fail(unanswerable)
    interactive = stdin.isatty()
    try:
        answer = prompt()
    except (typer.Abort, EOFError, RuntimeError, OSError, ValueError):
        # Abort: click's EOF or Ctrl-C; RuntimeError: "input(): lost sys.stdin" (a closed descriptor);
        # ValueError: I/O on a closed file.
        out.print()  # end the prompt's line
        raise fail(unanswerable) from None
    if not interactive:
        out.print()  # end the prompt's line: an answer read from a pipe or file is not echoed
    return answer
