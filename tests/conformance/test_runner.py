"""The conformance runner's verdicts (PASS, FAIL, XFAIL, XPASS) and its last line, without Node."""

from __future__ import annotations

import pytest

from tests.conformance.runner import Outcome, summarize


def outcome(name: str, *statuses: str) -> Outcome:
    return Outcome(name, checks=[{"id": f"check-{i}", "status": s} for i, s in enumerate(statuses)])


def test_a_scenario_passes_with_checks_and_no_failure_and_warnings_do_not_fail_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = summarize([outcome("a", "SUCCESS", "WARNING"), outcome("b", "SUCCESS", "FAILURE")], set())
    lines = capsys.readouterr().out.splitlines()
    assert code == 1
    assert lines[0].split()[:2] == ["a", "PASS"]
    assert "warn: check-1" in lines[0]
    assert lines[1].split()[:3] == ["b", "FAIL", "check-1"]
    assert lines[-1] == "1 passed, 1 failed"


def test_no_recorded_checks_is_a_failure(capsys: pytest.CaptureFixture[str]) -> None:
    assert summarize([Outcome("silent", notes=["no checks.json"])], set()) == 1
    assert capsys.readouterr().out.splitlines()[-1] == "0 passed, 1 failed"


def test_a_listed_failure_is_expected_and_a_listed_pass_is_stale(capsys: pytest.CaptureFixture[str]) -> None:
    assert summarize([outcome("known", "FAILURE")], {"known"}) == 0
    assert "XFAIL" in capsys.readouterr().out
    assert summarize([outcome("fixed", "SUCCESS")], {"fixed"}) == 1
    out = capsys.readouterr().out
    assert "XPASS" in out
    assert "stale expected-failures entries (now passing): fixed" in out


def test_single_checks_can_be_waived_by_scenario_and_check_id(capsys: pytest.CaptureFixture[str]) -> None:
    assert summarize([outcome("s", "SUCCESS", "FAILURE")], {"s:check-1"}) == 0
    assert "XFAIL" in capsys.readouterr().out


def test_the_server_suite_fails_only_a_scenario_that_passes_directly_but_not_through_the_gateway(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """R-8.4: the fixture's own failures are skipped; a gateway-only failure fails unless listed."""
    from tests.conformance.server_suite import judge

    direct = [outcome("both", "SUCCESS"), outcome("fixture-limit", "FAILURE"), outcome("gateway-only", "SUCCESS")]
    via = [outcome("both", "SUCCESS"), outcome("fixture-limit", "FAILURE"), outcome("gateway-only", "FAILURE")]
    assert judge(direct, via, set()) == 1
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[1] for line in lines[:3]] == ["PASS", "SKIP", "FAIL"]
    assert lines[-1] == "1 passed, 2 failed"
    assert judge(direct, via, {"gateway-only"}) == 0
    assert "XFAIL" in capsys.readouterr().out
