"""Change stamps taken once per gateway request batch instead of once per look (R-1.2, R-8.3, issue 12).

**The guarantee.** A change another process commits — the CLI revoking a gateway token, a second
instance disabling a tool — counts for the very next call that reaches this process after the
writer returned. `JsonStore.stamp()` gives it by a `stat` of the section's file and a look at the journal
(`files.file_stamp`): the writer's rename happened before it returned, so any `stat` made after the
call arrived sees it. A forwarded gateway call used to look twice (tool schema, then policy), each
look two `stat` calls; at 64 calls in flight, 64 calls of one event-loop step each made their own.

**What is reused, and why it stays fresh.** A stamp taken while a request is being served may be
kept (see below) with two marks: the count of requests that had *arrived* when it was taken (`request_arrived`,
counted by the gateway endpoint once a request's bytes are in) and the event-loop *turn* it was
taken in. Another look reuses it only when both hold:

1. it was taken after the asking request arrived (`taken >= since`): the `stat` happened after the
   request's bytes were in, hence after the agent sent them, hence after the writer returned — the
   same order a fresh `stat` would give. The gateway's direct route checks the token inside the
   protocol's `data_received` (the same loop step that read the bytes), which is why a turn alone
   would not do;
2. it was taken in the current turn of the event loop: the turn ends with a callback scheduled when
   the first stamp of the turn is kept, so it runs before any task woken by I/O that came later.
   This bounds any reuse to one loop step, so a long-lived task (a session's SDK task that
   inherited a request's mark, a background poll) never keeps an old stamp.

**What is kept, and when.** A stamp is kept only when a request arrived after the asking one
(`taken > since`): a batch is being served (several requests read in one poll, their tasks
stepping in one turn), and the batch's other looks in that turn may share it. The stamp of the
request that arrived last is not kept, so a lone request (concurrency 1: a forwarded call looks
once per file, and no other request is there to share) schedules no end of turn; that `call_soon`
cost every such call an event-loop iteration of its own (a non-waiting `epoll_pwait`) and an
`asyncio.get_running_loop()` (a `getpid` on Python 3.11), issue 12. Keeping less never makes a
look staler: a stamp not kept only means that the next look makes its own `stat` (a lone request
looking twice at one file in one step stats twice).

Outside a request (`since` unset: the library, the CLI, the REST API, background tasks started
outside the gateway) every look is a `stat`, as before. A worker thread (no running loop) never
starts a turn: it keeps its own `stat` only while the loop's current turn is open, and reuses only
under rules 1 and 2, so the guarantee is the same. A commit of this process (`forget`) invalidates
everything kept, so it reads its own writes at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextvars import ContextVar, Token

from mcp_center.store.files import Stamp, file_stamp, rare_file_stamp

__all__ = ["FreshStamps", "enter_request", "leave_request", "request_arrived", "serving_request"]

_arrived = 0
"""Requests counted by `request_arrived` in this process (its marks)."""
_since: ContextVar[int] = ContextVar("mcp_center_request_since", default=0)
"""The arrival mark of the request this context serves; 0 outside any."""


def request_arrived() -> int:
    """Count a request whose bytes have been received; return its arrival mark (> 0).

    Call it on the event loop's thread, after the request's head (or body) was read and before
    anything of it looks at the store; pass the mark to `serving_request`."""
    global _arrived
    _arrived += 1
    return _arrived


class serving_request:  # lower case: used as the function it was, `with serving_request(mark):`
    """Within the block (this task or synchronous code), stamps may be reused under the rules of
    the module docstring for the request with arrival mark `mark` (from `request_arrived`).

    A small class rather than a `contextlib.contextmanager` generator: a forwarded gateway call
    enters it twice, and the generator's frames were a measurable share of its CPU (issue 12)."""

    __slots__ = ("_mark", "_token")
    _token: Token[int]

    def __init__(self, mark: int) -> None:
        self._mark = mark

    def __enter__(self) -> None:
        self._token = _since.set(self._mark)

    def __exit__(self, *exc_info: object) -> None:
        _since.reset(self._token)


enter_request: Callable[[int], Token[int]] = _since.set
"""`serving_request(mark).__enter__` without its frames (the ContextVar's own method: no Python
frame, issue 12): returns the token to give `leave_request` when the request's block ends, in a
`finally` (`token = enter_request(mark)`, `try: ... finally: leave_request(token)`)."""
leave_request: Callable[[Token[int]], None] = _since.reset
"""`serving_request(mark).__exit__` without its frames: ends the block `enter_request` began."""


class FreshStamps:
    """`file_stamp` of a store's files with the reuse of the module docstring (one per store).

    Thread-safe under the GIL: a worker thread may look and `forget` while the
    loop thread looks; an entry whose `stat` raced a `forget` is stored under the old turn and never used.
    """

    def __init__(self) -> None:
        self._kept: dict[str, tuple[int, int, Stamp]] = {}
        """Path → (arrivals counted before its `stat`, turn, stamp)."""
        self._turn = 0
        self._turn_ends = False
        """The callback that ends the current turn is scheduled (on `_turn_loop`)."""
        self._turn_loop: asyncio.AbstractEventLoop | None = None

    def stamp(self, path: str, rare: bool = False) -> Stamp:
        """The `Stamp` of `path`: a kept one when the rules allow, else a new one (kept when on the loop
        and a request arrived after the asking one).

        Args:
            rare: `path` is usually absent (the journal): a new stamp is `rare_file_stamp`'s, not `file_stamp`'s.
        """
        look = rare_file_stamp if rare else file_stamp
        since = _since.get()
        if not since:
            return look(path)
        if self._turn_ends and self._turn_loop is not None and self._turn_loop.is_closed():
            self._end_turn()  # its loop was closed before it ended the turn (a library's second `anyio.run`)
        turn = self._turn
        kept = self._kept.get(path)
        if kept is not None and kept[0] >= since and kept[1] == turn:
            return kept[2]
        arrived = _arrived  # read before the stat: the stat is after every arrival counted so far
        stamp = look(path)
        if arrived == since:  # the asking request arrived last: kept for nobody (see the module docstring)
            return stamp
        if not self._turn_ends:  # the first stamp kept this turn: schedule the turn's end (its lines
            # here, not a method's: every forwarded call takes one, issue 12)
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:  # a worker thread: nothing marks its turns, nothing may be kept
                return stamp
            self._turn_ends = True
            self._turn_loop = loop
            loop.call_soon(self._end_turn)
        self._kept[path] = (arrived, turn, stamp)
        return stamp

    def forget(self) -> None:
        """Drop everything kept (this process committed: its next look must see its own write)."""
        self._turn += 1
        self._kept.clear()

    def _end_turn(self) -> None:
        self._turn += 1
        self._turn_ends = False
        self._kept.clear()
