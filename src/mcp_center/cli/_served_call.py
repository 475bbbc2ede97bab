"""`mcp-center call` beside the serve that owns the data directory: the serve's REST call (call40, R-9.2).

In-process, `call` opened the data directory, imported the host and started the server once more in
its own process beside the serve's live session (trial40: 11.4 s wall and 6.5 s of CPU for
`get_current_time`, 0.15 s through REST). Beside a serve it is now `POST
/api/mcp/servers/{id}/tools/{tool}/call` on that serve (admin token of the directory,
`cli.host.HostClient`): the serve's session runs it, its logs have it, and the result, the refusals
(their codes, next steps and exit codes) and the output are the same as in-process.

What changes beside a serve, on purpose:

- A server's question (elicitation): in-process the CLI advertises no elicitation, so the server is
  told "not supported". The serve advertises it: the call waits for an answer on the serve's Inbox,
  and `call` says so on stderr (the card's address) while it waits; the wait for the serve's answer
  is lengthened by the time such a card is pending (the serve's own call clock stops then too).
- Ctrl-C: the call is cancelled on the serve (`POST /api/operations/{id}/cancel`, R-3.8) with the
  operation id `call` chose, then `call` exits 130.
- The serve gone: refused when first asked, `call` runs in-process as before (nothing was sent);
  a serve that takes the request and closes the connection, or gives no answer in time, is
  MCP_SERVER_UNREACHABLE (exit 7) and the call is never run again here: a tool call is not
  idempotent and the serve may have run it (break39).
- The serve silent while the call runs (stopped with SIGSTOP, hung, its loop blocked): each second
  `call` looks at the serve's pending questions on a connection of its own, within the 5 s every
  verb's look has; a look without an answer in that time ends the wait at once (exit 7, "did not
  answer within 5 s"), where it used to last the whole call wait (start-up + call timeout + 60 s,
  180 s by default) without a word (cli36). The call is not run here then either.
- No admin token here (the admin-token file deleted, no MCP_CENTER_ADMIN_TOKEN) beside a live
  serve: refused (ADMIN_AUTH_REQUIRED, exit 6), never run in this process, which would start a
  second copy of the server beside the serve's (cli36).

Sampling is refused alike on both paths (no agent declared it; R-8.5); neither shows progress
notifications (the spinner only).
"""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any
from urllib.parse import quote

import typer

from mcp_center.cli._served import hung, no_token_beside_serve, serve_to_ask, server_path
from mcp_center.cli._shared import err, fail, out, print_json
from mcp_center.cli._suggest import suggested
from mcp_center.config import Settings
from mcp_center.errors import (
    AdminAuthRequired,
    CenterError,
    FieldError,
    HostRequestFailed,
    RequestInvalid,
    ServerUnreachable,
)
from mcp_center.interchange.display import display_url
from mcp_center.models import is_array, is_object
from mcp_center.service.tool_arguments import missing_arguments_example

__all__ = ["CALL_MARGIN_S", "POLL_S", "missing_example", "print_call_result", "served_call"]

CALL_MARGIN_S = 60.0
"""Seconds added to a server's start-up and call timeouts for the serve's answer to a call (its own
steps around them: a lazy connection, the argument check, the answer's bounding)."""

POLL_S = 1.0
"""Seconds between two looks at the serve's pending questions while a call waits (one small `GET`)."""

_DEFAULT_STARTUP_S = 60.0
"""A server's start-up timeout when its record sets none (a stdio server's default; a remote one's is 30 s)."""

INTERRUPTED_EXIT = 130
"""What `call` exits with after Ctrl-C beside a serve (128 + SIGINT, as a shell reports it)."""


def served_call(settings: Settings, server_id: str, tool: str, arguments: Any) -> dict[str, Any] | None:
    """The serve's answer to the call of `tool` of `server_id` with `arguments` (the MCP
    `CallToolResult` as JSON), or None when there is no serve to ask (none live on the data
    directory, one on a database, a database given here, or nothing listening when it is first
    asked: connection refused, nothing sent); the caller then runs the call in-process.
    Also None for a tool whose name holds a '/' (the spec advises against it, servers may still use
    one): the REST API's paths never carry one (break41: such a tool could not be called beside a serve).

    First a look at the server's record within `host.ANSWER_TIMEOUT_S` (5 s; the serve answers it
    from its store, starting nothing): a serve that takes the connection and says nothing is hung and
    is said so before the call is sent. Then the call, waited for up to the server's start-up timeout,
    its call timeout and `CALL_MARGIN_S`, plus the time a question of the call's is pending, while
    the serve answers a look each `POLL_S` within `ANSWER_TIMEOUT_S` (`_Call.answer`).

    Raises:
        typer.Exit: the serve refused the call (its error printed as the same error in-process:
            code, next step, did-you-mean, the `--args` to pass; the exit code of its code); the
            arguments are no JSON object (REQUEST_INVALID, exit 2, nothing sent); the serve is hung
            (MCP_SERVER_UNREACHABLE, `details.reason` `hung`, exit 7, nothing sent), stopped
            answering its looks while the call ran (`hung`: the call was sent), closed the
            connection during the call (`dropped`), gave no answer in time (`timeout`; a cancel is
            sent) or stopped listening between the look and the call (`refused`): exit 7, and the call
            is not run here; no admin token here beside the live serve (ADMIN_AUTH_REQUIRED, exit 6,
            nothing sent, nothing run); Ctrl-C (the call cancelled on the serve, exit 130).
    """
    address = serve_to_ask(settings)
    if address is None or "/" in tool:
        return None
    from mcp_center.cli.host import ANSWER_TIMEOUT_S, HostClient

    try:
        with HostClient(settings, timeout_s=ANSWER_TIMEOUT_S, recorded=address) as look:
            view: object = look.call("GET", server_path(server_id))
    except AdminAuthRequired:
        raise fail(no_token_beside_serve(settings, address), settings=settings, serve=True) from None
    except HostRequestFailed:
        view = None  # it answers: the call says what is wrong, once
    except ServerUnreachable as exc:
        reason = exc.details.get("reason")
        if reason == "refused":
            return None
        if reason == "timeout":
            exc = hung(settings, str(exc.details.get("url", "")), ANSWER_TIMEOUT_S, "the call was not sent")
        raise fail(exc, settings=settings, serve=True) from None
    if arguments is not None and not is_object(arguments):  # as the service says it in-process
        raise fail(
            RequestInvalid(
                "arguments: must be a JSON object",
                details={"errors": [FieldError("arguments", "FIELD_INVALID", "must be a JSON object").to_dict()]},
            )
        )
    call = _Call(settings, server_id, tool, arguments, view)
    try:
        return call.answer()
    except HostRequestFailed as exc:
        example = missing_example(exc)
        exit_ = fail(exc, settings=settings)
        if example is not None:
            err.print(f"  pass --args '{example}'", markup=False, highlight=False)
        raise exit_ from None
    except ServerUnreachable as exc:  # refused too: the serve answered a moment ago, it is not run here
        raise fail(exc, settings=settings, serve=True) from None
    except CenterError as exc:
        raise fail(exc, settings=settings) from None


class _Call:
    """One call on the serve: sent from a thread of its own while this one watches the clock, the
    serve's pending questions and Ctrl-C."""

    def __init__(self, settings: Settings, server_id: str, tool: str, arguments: Any, view: object) -> None:
        self._settings = settings
        self._server_id = server_id
        self._path = server_path(server_id, "tools", quote(tool, safe=""), "call")
        self.operation_id = uuid.uuid4().hex
        self._body = {"arguments": arguments, "operation_id": self.operation_id}
        self.wait_s = call_wait_s(view)
        self._outcome: list[Any] = []
        self._failure: list[BaseException] = []
        self._announced: set[str] = set()
        self._base_url = ""

    def answer(self) -> Any:
        """The serve's answer (JSON), waited for as `served_call` says.

        Each `POLL_S` while the call runs, a look at the serve's pending questions (`_look`), on a
        connection of its own within `ANSWER_TIMEOUT_S`, is also the serve's liveness: a look the
        serve does not answer in that time ends the wait at once (`hung`), not after `wait_s`.

        Raises:
            HostRequestFailed: the serve's error answer. ServerUnreachable: no answer (`refused`,
            `dropped`, `timeout`), or a look unanswered while the call ran (`hung`). typer.Exit:
            Ctrl-C (after the cancel was sent).
        """
        from mcp_center.cli.host import HostClient

        # The request's own deadline is left long (the elicitation timeout on top): this thread's
        # clock, which stops while a question is pending, says when the wait is over.
        client = HostClient(self._settings, timeout_s=self.wait_s + self._settings.elicitation_timeout_s)
        self._base_url = client.base_url
        worker = threading.Thread(target=self._send, args=(client,), name="mcp-center-call", daemon=True)
        try:
            # Started inside the `try`: a Ctrl-C while the thread starts (its request may be on its way)
            # still sends the cancel (break41: it exited 130 and the tool ran on).
            worker.start()
            deadline = time.monotonic() + self.wait_s
            while True:
                worker.join(POLL_S)
                if not worker.is_alive():
                    break
                pending_s = self._look()
                if pending_s is None:  # the serve did not answer the look within ANSWER_TIMEOUT_S
                    if not worker.is_alive():  # the call's answer came meanwhile: it says what happened
                        break
                    raise self._silent()
                deadline += pending_s
                if time.monotonic() >= deadline:
                    self._cancel(quietly=True)
                    raise ServerUnreachable(
                        f"the serve on {display_url(self._base_url)} did not answer the call within "
                        f"{self.wait_s:g} s (is it hung or stopped?); a cancel was sent, and the tool may "
                        "have run there: it is not called again here",
                        details={"reason": "timeout", "url": display_url(self._base_url)},
                    )
        except KeyboardInterrupt:
            self._cancel(quietly=False)
            raise typer.Exit(INTERRUPTED_EXIT) from None
        if self._failure:
            raise self._failure[0]
        return self._outcome[0]

    def _send(self, client: Any) -> None:
        try:
            self._outcome.append(client.call("POST", self._path, self._body))
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread, raised there
            self._failure.append(exc)

    def _look(self) -> float | None:
        """Say once, on stderr, each question (elicitation card) the serve holds for this call; the
        seconds the clock stops for (`POLL_S` when one is pending, else 0), or None when the serve
        took the look's connection and did not answer it within `ANSWER_TIMEOUT_S` (busy, hung or
        stopped). A look that fails otherwise (refused, dropped, an error answer) says nothing: the
        call's own request reports a serve that went away."""
        from mcp_center.cli.host import ANSWER_TIMEOUT_S, HostClient

        try:
            with HostClient(self._settings, timeout_s=ANSWER_TIMEOUT_S) as client:
                listed: object = client.call("GET", "/api/interactions?state=pending")
        except ServerUnreachable as exc:
            return None if exc.details.get("reason") == "timeout" else 0.0
        except CenterError:
            return 0.0
        cards: object = listed.get("interactions") if is_object(listed) else None
        ours = [card for card in (cards if is_array(cards) else []) if is_object(card) and self._is_ours(card)]
        for card in ours:
            card_id = str(card.get("id"))
            if card_id in self._announced:
                continue
            self._announced.add(card_id)
            err.print(
                f"the server asks a question; the call waits for your answer on the serve's Inbox: "
                f"{display_url(self._base_url)}/inbox/{quote(card_id, safe='')} (Ctrl-C cancels the call)",
                markup=False,
                highlight=False,
            )
        return POLL_S if ours else 0.0

    def _silent(self) -> ServerUnreachable:
        """The serve did not answer a look while the call ran (`hung`): the call was sent, so it may
        have run there, or run on once the serve answers again; it is never run again here."""
        from mcp_center.cli.host import ANSWER_TIMEOUT_S

        return hung(
            self._settings,
            self._base_url,
            ANSWER_TIMEOUT_S,
            "the call was sent and may have run there (or run on once the serve answers again), so it is "
            f"not called again here: see '{suggested('logs', self._server_id, settings=self._settings)}' "
            "before you call it again",
            again=False,
        )

    def _is_ours(self, card: dict[str, Any]) -> bool:
        calls: object = card.get("calls")
        return is_array(calls) and any(is_object(ref) and ref.get("operation_id") == self.operation_id for ref in calls)

    def _cancel(self, *, quietly: bool) -> None:
        """Ask the serve to cancel the call (R-3.8) and, unless `quietly`, say what came of it."""
        from mcp_center.cli.host import ANSWER_TIMEOUT_S, HostClient

        try:
            with HostClient(self._settings, timeout_s=ANSWER_TIMEOUT_S) as client:
                answer: object = client.call("POST", f"/api/operations/{self.operation_id}/cancel")
        except CenterError as exc:
            if not quietly:
                err.print(
                    f"interrupted: the cancel did not reach the serve ({exc.code}); the call may still run "
                    f"there: see '{suggested('logs', self._server_id, settings=self._settings)}'",
                    markup=False,
                    highlight=False,
                )
            return
        if quietly:
            return
        if is_object(answer) and answer.get("cancelled"):
            line = (
                "interrupted: the serve was told to cancel the call and stopped waiting for it; the tool may "
                f"have done part or all of its work already (operation {self.operation_id}): see "
                f"'{suggested('logs', self._server_id, settings=self._settings)}'"
            )
        else:
            line = (
                "interrupted: the call was not running on the serve (it had ended, or had not started: "
                f"the cancel is kept and it will not start; operation {self.operation_id})"
            )
        err.print(line, markup=False, highlight=False)


def call_wait_s(view: object) -> float:
    """Seconds to wait for the serve's answer to a call of the server of `view` (its JSON from `GET
    /api/mcp/servers/{id}`, or None): its start-up timeout (the call may start it; 60 s when unset)
    plus its `call_timeout_s` (60 s when unknown) plus `CALL_MARGIN_S`."""

    def seconds(key: str, default: float) -> float:
        value: object = view.get(key) if is_object(view) else None
        if isinstance(value, bool) or not isinstance(value, int | float):
            return default
        return float(value)

    return seconds("startup_timeout_s", _DEFAULT_STARTUP_S) + seconds("call_timeout_s", 60.0) + CALL_MARGIN_S


def missing_example(exc: CenterError) -> str | None:
    """`{"NAME": ..., ...}` for the names a missing-argument refusal lists (`details.missing` and
    `details.tool`, `service.tool_arguments.require_arguments`), raised here or answered by a serve;
    an example to pass, never a value. None for any other error."""
    code = exc.api_code if isinstance(exc, HostRequestFailed) else exc.code
    return missing_arguments_example(exc.details) if code == RequestInvalid.code else None


def print_call_result(result: dict[str, Any]) -> None:
    """Print a tool's result (the MCP `CallToolResult` as JSON, from the serve or in-process): each
    text block as it is, other blocks as one line each (`[image image/png, about N bytes]`,
    `[resource link URI]`, `[resource URI]` and its text), the structured content as JSON when there
    is no text block. The server's words, printed as text, never as markup.

    Raises:
        typer.Exit: code 1 when the result is a tool error (`isError`).
    """
    blocks: object = result.get("content")
    texts = 0
    for block in blocks if is_array(blocks) else []:
        if not is_object(block):
            continue
        kind = block.get("type")
        if kind == "text":
            texts += 1
            out.print(str(block.get("text", "")), markup=False, highlight=False)
        elif kind in {"image", "audio"}:
            size = len(str(block.get("data", ""))) * 3 // 4
            out.print(f"[{kind} {block.get('mimeType')}, about {size} bytes]", markup=False, highlight=False)
        elif kind == "resource_link":
            out.print(f"[resource link {block.get('uri')}]", markup=False, highlight=False)
        else:
            resource: object = block.get("resource")
            resource = resource if is_object(resource) else {}
            binary = f"[binary {resource.get('mimeType') or '?'}]"
            shown = resource["text"] if isinstance(resource.get("text"), str) else binary
            out.print(f"[resource {resource.get('uri')}]\n{shown}", markup=False, highlight=False)
    if result.get("structuredContent") is not None and not texts:
        print_json(result["structuredContent"])
    if result.get("isError"):
        raise typer.Exit(1)
