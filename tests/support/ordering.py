"""The order the suite's tests are handed to pytest-xdist workers: the longest first (issue 16).

`LongFirstScheduling` (chosen by tests/conftest.py for xdist's default `--dist load`) hands tests out
one at a time in collection order, so a test that takes 20 s starts at the beginning of the run,
beside the short ones, instead of being picked up last and finishing the run alone; the modules of
`ONE_WORKER` go to one worker whole, so their module fixture is built once. (xdist's own
`xdist_group` cannot do that here: it renames node ids through an attribute pytest 9 no longer
reads.) `LONG_FIRST` names those tests,
longest first, by node-id prefix (a whole module, or one test with all its parameters); the
measured times are those of `pytest --durations` on the 2-core machine (call plus setup, seconds).
The browser tests keep their place after every other test (tests/web/conftest.py) and are ordered
among themselves the same way.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdist.scheduler import LoadScopeScheduling

__all__ = ["LONG_FIRST", "ONE_WORKER", "LongFirstScheduling", "long_first_rank", "work_unit"]

LONG_FIRST: tuple[str, ...] = (
    # 26 s, 19 s, 13 s: refresh races, approvals and cards decided across processes
    "tests/e2e/test_shared_state.py::test_serve_and_the_cli_refresh_a_rotating_refresh_token_once",
    "tests/api/test_openapi_live.py::test_schemathesis_finds_no_server_error_and_no_undocumented_status",
    "tests/e2e/test_lifecycle.py::test_a_killed_one_shot_cli_command_leaves_no_server_process",
    "tests/e2e/test_shared_state.py::test_a_library_scripts_approval_or_card_is_decided_in_serve",
    "tests/e2e/test_lifecycle.py::test_sigkill_of_serve_leaves_no_server_process_and_a_restart_runs_exactly_one",
    "tests/e2e/test_serve.py::test_a_second_serve_on_a_busy_port_fails_before_starting_anything",
    "tests/e2e/test_lifecycle.py::test_a_restart_reaps_what_serve_and_its_watchdog_left",
    "tests/test_library_example.py::test_a_second_run_calls_its_own_server",
    "tests/e2e/test_capabilities_e2e.py::test_a_card_left_pending_across_a_restart_of_serve",
    "tests/e2e/test_instances.py",  # one two-instance cluster for the module (8 s to start)
    "tests/e2e/test_database_cli.py::test_a_data_directory_migrates_whole",
    "tests/cli/test_sandbox_cli.py::test_logs_mark_what_the_sandbox_refused",
    "tests/e2e/test_instances_oauth.py::test_two_instances_refresh_a_rotating_refresh_token_once",
    "tests/e2e/test_serve.py::test_an_agent_that_goes_away_mid_request_is_one_log_line",
    "tests/hostile/test_connections.py::test_a_cancel_while_a_call_waits_for_a_lazy_connection",
    "tests/e2e/test_readme_clients.py",
    "tests/test_library_example.py::test_a_tool_error_ends_the_example",
    "tests/store/test_crash.py",  # one forkserver for the module
    "tests/cli/test_add_and_list.py::test_the_cli_test_counts_the_tools_serve_sees",
    "tests/e2e/test_shared_state.py::test_serve_does_not_start_on_a_damaged_data_file",
    # browser tests (they run after all the others; measured with -n 2 and one shared serve per worker,
    # tests/support/shared_host.py): 36 s, 21 s, 18 s, 18 s, 17 s, 15 s, 14 s, 10-13 s each...
    "tests/web/test_layout.py::test_screenshots_of_the_main_screens",
    "tests/web/test_approvals_and_cards.py::test_a_question_interrupted_by_a_restart",
    "tests/web/test_server_flow.py::test_a_stdio_server_from_the_uvx_template",
    "tests/web/test_hostile_server_ui.py",
    "tests/web/test_editor.py::test_two_pages_editing_one_server_get_a_conflict",
    "tests/web/test_approvals_and_cards.py::test_a_tool_policy_is_set_from_the_tools_tab",
    "tests/web/test_debugger.py",
    "tests/web/test_layout.py::test_the_main_screens_fit_a_400_px_window",
    "tests/web/test_authorization.py::test_authorize_opens_a_window_at_the_shown_issuer",
    "tests/web/test_prompts_and_resources.py::test_a_real_servers_embedded_binary",
    "tests/web/test_live_updates.py::test_the_page_polls_while_the_stream_fails",
    "tests/web/test_approvals_and_cards.py",
)
"""Node-id prefixes of the long tests, longest first; a test matches its first prefix."""


def long_first_rank(nodeid: str, prefixes: Sequence[str] = LONG_FIRST) -> int:
    """The sort key of a test: the index of the first of `prefixes` its node id starts with, or
    len(prefixes) for every other test, which keeps its collection order behind them (a stable sort)."""
    for rank, prefix in enumerate(prefixes):
        if nodeid.startswith(prefix):
            return rank
    return len(prefixes)


ONE_WORKER: tuple[str, ...] = ("tests/e2e/test_instances.py::", "tests/store/test_crash.py::")
"""Modules whose tests share one costly module fixture (a two-instance cluster, a forkserver): each
runs whole on one worker."""


class LongFirstScheduling(LoadScopeScheduling):
    """xdist's scope scheduling where every test is its own unit, except the modules of `ONE_WORKER`
    (one unit each). Units go out in collection order (with `--no-loadscope-reorder`; without it
    xdist puts the bigger units first), a worker holding at most a few at a time."""

    def _split_scope(self, nodeid: str) -> str:
        return work_unit(nodeid)


def work_unit(nodeid: str, one_worker: Sequence[str] = ONE_WORKER) -> str:
    """The unit of work a test belongs to: its module's prefix in `one_worker`, else its own node id."""
    return next((module for module in one_worker if nodeid.startswith(module)), nodeid)
