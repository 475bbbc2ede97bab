"""Call deadlines that pause while a human answers (R-3.8 with R-6.1).

Threat: a tool call killed by its own timeout while the server waits for the user to fill in an
elicitation form — the SDK's per-request timeout keeps running during the human's answer
(docs/sdk-notes.md#elicitation), so a 60 s call timeout would fail every form that takes a minute
to fill in, and the server would get the answer too late.

Calls therefore run with no SDK timeout, inside a `PausableDeadline`: an anyio cancel scope that a
timer of the event loop cancels when the time is up (on asyncio; the scope's own deadline on any
other loop), stopped while any interaction card of the call's connection is pending
(`CallDeadlines.hold`) and set again to "now + the time that was left" when the last card closes.
The elicitation request does not say which call it belongs to (the client SDK exposes no related
request id), so a pending card pauses every call on that connection: it can only delay a
timeout, never cause one. Expiry cancels the awaiting task, which makes the SDK send
`notifications/cancelled` to the server.

Progress (issue 14, item 4): `extend()` restarts the clock — a server that reports progress is still
working — but never beyond `max_total_s` seconds of running (not paused) time in total, so a server
that reports progress forever still ends.

Riding (issue 12, R-8.3): a forwarded call's deadline needs no cancel scope of its own when the
operation's admission (`runtime/operations.Admission`) entered one just outside it — the
admission's scope is then the innermost one and its deadline is the call's. Expiry unwinds to the
admission, which raises the deadline's own error (`expiry`) there unless the operation was
cancelled by id; the answers of a timed-out and of a cancelled call stay what they were.

One timer for a board's calls (issue 12, R-8.3): on asyncio the deadlines of one `CallDeadlines`
share one timer of the loop (`_SharedTimer`), set for the earliest of them. A call adds its
deadline and, when it ends, takes it out again; the timer is set again only for a deadline
earlier than the one it waits for. A timer made and cancelled per call cost each forwarded call
an event-loop iteration of its own on uvloop: a cancelled timer's handle is closed by the loop,
and a loop with a handle to close polls without waiting. When the timer fires it cancels the
scope of every deadline that is due (those at or before the time it was set for, or the loop's
clock if later) and is set for the earliest one left; one it fires for whose call has ended
finds nothing due. The deadline of a call ends at the same moment as with a timer of its own.
The timer runs in an empty context of its own, so it keeps no call's context alive.
"""

from __future__ import annotations

import asyncio
import contextvars
import math
from collections.abc import Callable, Generator
from contextlib import contextmanager
from types import TracebackType
from typing import TYPE_CHECKING

from mcp_center.runtime.scopes import cancel_scope, current_time, running_loop

if TYPE_CHECKING:
    from mcp_center.runtime.operations import Admission

__all__ = ["CallDeadlines", "PausableDeadline"]


class PausableDeadline:
    """A cancel scope that expires after `timeout_s` seconds of not-paused time. Use as `with`.

    With `riding` (an admission entered just outside this block, see the module docstring) and
    `expiry`, no scope of its own is made: the block sets the admission's scope's deadline and
    gives it back unbounded on exit, and expiry is raised by the admission as `expiry(self)`.
    Without them the block swallows its own expiry (`expired`) and the caller raises.

    Attributes:
        timeout_s: The budget in seconds (restarted by `extend()`).
        max_total_s: The most running time `extend()` may grant in total, in seconds; None: no bound.
        paused_s: Seconds spent paused so far.
    """

    def __init__(
        self,
        timeout_s: float,
        board: CallDeadlines | None = None,
        key: str | None = None,
        max_total_s: float | None = None,
        riding: Admission | None = None,
        expiry: Callable[[PausableDeadline], BaseException] | None = None,
    ) -> None:
        # Not keyword-only: a forwarded call makes one with every argument in place (a class called
        # with keywords costs a dictionary of them and its unpacking, issue 12).
        self.timeout_s = timeout_s
        self.max_total_s = max_total_s
        self.paused_s = 0.0
        self._entered_at = 0.0
        self._board = board
        self._key = key
        ridden = riding.scope if riding is not None and expiry is not None else None
        self._riding = riding if ridden is not None else None
        self._expiry = expiry
        self._scope = ridden if ridden is not None else cancel_scope()
        self._remaining = timeout_s
        self._paused_at: float | None = None
        self._deadline = math.inf
        """When the clock ends the block (loop-clock seconds; inf while paused or outside it)."""
        self._loop: asyncio.AbstractEventLoop | None = None
        """The asyncio loop whose timer (`_timer`, or the board's `_shared`) cancels the scope; None
        elsewhere (the scope's own deadline)."""
        self._timer: asyncio.TimerHandle | None = None
        self._shared: _SharedTimer | None = None
        """The board's timer on `_loop`, which this deadline is in while its clock runs (see the module docstring)."""

    def __enter__(self) -> PausableDeadline:
        riding = self._riding  # entered by this task: its loop is the one the admission looked up
        loop = self._loop = riding.loop if riding is not None else running_loop()
        self._entered_at = now = loop.time() if loop is not None else current_time()
        if self.max_total_s is not None:
            self._remaining = min(self._remaining, self.max_total_s)
        deadline = now + self._remaining
        board, key = self._board, self._key
        if loop is not None and self._timer is None and (board is None or key is None or key not in board._holds):  # pyright: ignore[reportPrivateUsage]
            # The usual entry (asyncio, no hold of its connection): `_arm` and `_attach` in line,
            # two frames less per forwarded call (issue 12, R-8.3); same timer, same order.
            self._deadline = deadline
            if board is not None:  # `_arm`'s shared timer in line (see the module docstring)
                shared = board._shared  # pyright: ignore[reportPrivateUsage]
                if shared is None or shared.loop is not loop:
                    shared = board._shared = _SharedTimer(loop)  # pyright: ignore[reportPrivateUsage]
                self._shared = shared
                if deadline != math.inf:
                    shared.due[self] = deadline
                    if deadline < shared.set_for:
                        shared.set(deadline)
            elif deadline != math.inf:
                self._timer = loop.call_at(deadline, self._scope.cancel)
            if riding is None:
                self._scope.__enter__()
            if board is not None and key is not None:
                board._running.setdefault(key, set()).add(self)  # pyright: ignore[reportPrivateUsage]
            return self
        self._arm(deadline)
        if riding is None:
            self._scope.__enter__()
        if board is not None and key is not None:
            board._attach(key, self)  # pyright: ignore[reportPrivateUsage]
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool:
        if self._board is not None and self._key is not None:
            self._board._detach(self._key, self)  # pyright: ignore[reportPrivateUsage]
        riding = self._riding
        self._arm(math.inf)  # the clock stops (for a riding scope: unbounded again for the rest of its block)
        if riding is None:
            return bool(self._scope.__exit__(exc_type, exc, tb))
        if self._scope.cancel_called and exc_type is not None and issubclass(exc_type, asyncio.CancelledError):
            riding.expiring = self._expired_error  # the admission raises it if its scope caught this cancel
        return False

    def _arm(self, deadline: float) -> None:
        """End the block at loop-clock time `deadline` (inf: never). On asyncio a timer of the loop
        cancels the scope, as anyio's own deadline does, without anyio's deadline bookkeeping (its
        handler runs, and asks the loop for the time, at every change: twice per forwarded call;
        issue 12, R-8.3): the board's shared timer (`_SharedTimer`), or one of its own without a
        board; elsewhere the scope's own deadline."""
        self._deadline = deadline
        loop = self._loop
        if loop is None:
            self._scope.deadline = deadline
            return
        board = self._board
        if board is not None:  # the board's shared timer (see the module docstring)
            shared = self._shared
            if shared is None:
                shared = board._shared  # pyright: ignore[reportPrivateUsage]
                if shared is None or shared.loop is not loop:
                    shared = board._shared = _SharedTimer(loop)  # pyright: ignore[reportPrivateUsage]
                self._shared = shared
            if deadline == math.inf:
                shared.due.pop(self, None)
            else:
                shared.due[self] = deadline
                if deadline < shared.set_for:
                    shared.set(deadline)
            return
        timer = self._timer
        if timer is not None:
            timer.cancel()
            self._timer = None
        if deadline != math.inf:
            self._timer = loop.call_at(deadline, self._scope.cancel)

    def _expired_error(self) -> BaseException:
        assert self._expiry is not None
        return self._expiry(self)

    @property
    def paused(self) -> bool:
        """True while paused."""
        return self._paused_at is not None

    @property
    def expired(self) -> bool:
        """True when the deadline (not an outer cancellation) ended the block."""
        return self._scope.cancelled_caught

    @property
    def entered_at(self) -> float:
        """When the block was entered (the event loop's clock, `time.monotonic`'s on asyncio; seconds):
        a timeout names the server's stray output since then (`Connection.timed_out`, R-3.1)."""
        return self._entered_at

    @property
    def running_s(self) -> float:
        """Seconds of not-paused time since the block was entered."""
        now = current_time()
        paused_now = now - self._paused_at if self._paused_at is not None else 0.0
        return max(now - self._entered_at - self.paused_s - paused_now, 0.0)

    @property
    def total_reached(self) -> bool:
        """True when the block ended because `max_total_s` was used up (not for lack of progress)."""
        return self.expired and self.max_total_s is not None and self.running_s >= self.max_total_s - 0.05

    def extend(self) -> None:
        """Restart the clock: `timeout_s` from now, but no further than `max_total_s` of running time."""
        remaining = self.timeout_s
        if self.max_total_s is not None:
            remaining = min(remaining, max(self.max_total_s - self.running_s, 0.0))
        if self._paused_at is not None:
            self._remaining = remaining
        else:
            self._arm(current_time() + remaining)

    def pause(self) -> None:
        """Stop the clock (idempotent)."""
        if self._paused_at is not None:
            return
        now = current_time()
        self._remaining = max(self._deadline - now, 0.0)
        self._paused_at = now
        self._arm(math.inf)

    def resume(self) -> None:
        """Start the clock again with the time that was left (idempotent)."""
        if self._paused_at is None:
            return
        now = current_time()
        self.paused_s += now - self._paused_at
        self._paused_at = None
        self._arm(now + self._remaining)


class _SharedTimer:
    """One timer of `loop` for the running deadlines of a board (see the module docstring).

    Attributes:
        due: The deadlines whose clock runs, with the loop-clock time each ends its block at.
        set_for: The loop-clock time the timer is set for; inf when it is not set.
    """

    __slots__ = ("_context", "_timer", "due", "loop", "set_for")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.due: dict[PausableDeadline, float] = {}
        self.set_for = math.inf
        self._timer: asyncio.TimerHandle | None = None
        self._context = contextvars.Context()
        """The timer's own (empty) context: it keeps no call's context alive after that call ended."""

    def set(self, at: float) -> None:
        """Fire at loop-clock time `at` (earlier than `set_for`) instead."""
        if self._timer is not None:
            self._timer.cancel()
        self.set_for = at
        self._timer = self.loop.call_at(at, self._fire, context=self._context)

    def _fire(self) -> None:
        """Cancel the scope of every deadline due, then wait for the earliest one left."""
        limit = max(self.set_for, self.loop.time())  # the time it was set for has come, as the loop sees it
        self._timer = None
        self.set_for = math.inf
        due = self.due
        ended = [deadline for deadline, at in due.items() if at <= limit]
        for deadline in ended:
            del due[deadline]
        for deadline in ended:
            deadline._scope.cancel()  # pyright: ignore[reportPrivateUsage]
        if due:
            self.set(min(due.values()))


class CallDeadlines:
    """The running call deadlines per connection, the holds that pause them, and the timer that ends
    them on asyncio (`_SharedTimer`, one per loop)."""

    def __init__(self) -> None:
        self._running: dict[str, set[PausableDeadline]] = {}
        self._holds: dict[str, int] = {}
        self._shared: _SharedTimer | None = None

    def deadline(
        self,
        key: str,
        timeout_s: float,
        *,
        max_total_s: float | None = None,
        riding: Admission | None = None,
        expiry: Callable[[PausableDeadline], BaseException] | None = None,
    ) -> PausableDeadline:
        """A deadline for a call on connection `key`; paused while `key` is held. Enter it with `with`.

        Args:
            timeout_s: Seconds until expiry; `extend()` (progress) restarts them.
            max_total_s: Running seconds `extend()` may never go beyond; None: no bound.
            riding, expiry: Ride the scope of this admission, entered just outside the block, and
                let it raise `expiry(deadline)` on expiry (`PausableDeadline`); None: a scope of its own.
        """
        return PausableDeadline(timeout_s, self, key, max_total_s=max_total_s, riding=riding, expiry=expiry)

    @contextmanager
    def hold(self, key: str) -> Generator[None]:
        """Pause every deadline of connection `key` (running or starting) until the block ends.

        Holds nest: the clocks run again when the last hold of `key` ends.
        """
        self._holds[key] = self._holds.get(key, 0) + 1
        for deadline in list(self._running.get(key, ())):
            deadline.pause()
        try:
            yield
        finally:
            left = self._holds[key] - 1
            if left:
                self._holds[key] = left
            else:
                del self._holds[key]
                for deadline in list(self._running.get(key, ())):
                    deadline.resume()

    def held(self, key: str) -> bool:
        """True while connection `key` has a pending hold."""
        return key in self._holds

    def _attach(self, key: str, deadline: PausableDeadline) -> None:
        self._running.setdefault(key, set()).add(deadline)
        if key in self._holds:
            deadline.pause()

    def _detach(self, key: str, deadline: PausableDeadline) -> None:
        running = self._running.get(key)
        if running is not None:
            running.discard(deadline)
            if not running:
                del self._running[key]
