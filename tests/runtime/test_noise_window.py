"""A timeout names only the stdout noise written while its request waited (R-3.1, ux35).

`add_output_hints(..., since=)` reads `TransportProbe.recent_noise`, the last `NOISE_KEPT` non-JSON-RPC
stdout lines with their arrival time; a start-up banner written before the request must not be blamed
for its lost answer, and a flood larger than the window is reported as a lower bound.
"""

from __future__ import annotations

from mcp_center.runtime.attribution import add_output_hints, timeout_error
from mcp_center.transports import TransportProbe
from mcp_center.transports.factory import NOISE_KEPT


def _probe(lines: list[tuple[float, str]]) -> TransportProbe:
    probe = TransportProbe()
    for at, line in lines:
        probe.noise_count += 1
        if probe.first_noise is None:
            probe.first_noise = line
        probe.recent_noise.append((at, line))
    return probe


def test_noise_before_the_wait_is_not_named_but_noise_during_it_is() -> None:
    probe = _probe([(10.0, "banner"), (20.5, "oops"), (21.0, "again")])
    error = timeout_error("tools/call 'x'", 5)
    add_output_hints(error, probe, None, server_id="s", since=20.0)
    assert error.details["noise_lines"] == 2
    assert error.details["first_noise"].startswith("oops"), error.details
    assert "2 lines on stdout that are not JSON-RPC while the request waited" in error.message
    assert "noise_lines_at_least" not in error.details


def test_only_earlier_noise_adds_nothing() -> None:
    probe = _probe([(10.0, "banner")])
    error = timeout_error("tools/call 'x'", 5)
    before = error.message
    add_output_hints(error, probe, None, server_id="s", since=11.0)
    assert error.message == before
    assert "noise_lines" not in error.details and "log_command" not in error.details


def test_a_start_up_timeout_names_every_line_since_the_process_began() -> None:
    probe = _probe([(10.0, "banner"), (11.0, "more")])
    error = timeout_error("initialize", 5)
    add_output_hints(error, probe, None, server_id="s")
    assert error.details["noise_lines"] == 2 and error.details["first_noise"] == "banner"
    assert "while the request waited" not in error.message


def test_a_flood_beyond_the_window_is_a_lower_bound() -> None:
    probe = _probe([(100.0 + i, f"line {i}") for i in range(NOISE_KEPT + 10)])
    error = timeout_error("tools/call 'x'", 5)
    add_output_hints(error, probe, None, server_id="s", since=0.0)
    assert error.details["noise_lines"] == NOISE_KEPT
    assert error.details["noise_lines_at_least"] is True
    assert f"{NOISE_KEPT}+ lines on stdout" in error.message
