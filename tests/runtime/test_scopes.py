"""`runtime/scopes.py` (issue 12): the scopes it makes without asking which loop runs are anyio's own,
and behave as anyio's (deadline, cancel, shield) on the host's loops (asyncio and uvloop)."""

from __future__ import annotations

import sys

import anyio
import pytest

from mcp_center.runtime.scopes import cancel_scope, current_time

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["asyncio", "uvloop"])
def anyio_backend(request: pytest.FixtureRequest) -> tuple[str, dict[str, bool]]:
    return ("asyncio", {"use_uvloop": request.param == "uvloop"})


async def test_a_scope_made_without_the_lookup_is_anyios_and_keeps_its_deadline_cancel_and_shield() -> None:
    assert "trio" not in sys.modules  # the case the shortcut serves: any loop is asyncio's
    cancel_scope()  # the first one learns the class
    made = cancel_scope()
    assert type(made) is type(anyio.CancelScope())
    with cancel_scope(deadline=current_time() + 0.02) as timed:
        await anyio.sleep(5)
    assert timed.cancelled_caught
    with cancel_scope() as cancelled:
        cancelled.cancel()
        await anyio.sleep(5)
    assert cancelled.cancelled_caught
    with anyio.CancelScope() as outer:
        outer.cancel()
        with cancel_scope(shield=True) as shielded:
            await anyio.sleep(0.01)  # not cancelled: shielded
        assert not shielded.cancelled_caught
        await anyio.sleep(5)
    assert outer.cancelled_caught
