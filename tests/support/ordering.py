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
    # the time of each (the slowest of its parameters; a module's sum for a ONE_WORKER module) in a full
    # run at 095988a: junit setup + call + teardown, 4 workers on the 2-core machine. "~": estimated, for
    # the three tests/e2e/test_lifecycle.py tests since MCP_CENTER_STOP_GRACE_S (0.2 s there): their
    # full-run times (28, 27, 19 s) scaled by an A/B of the module alone (reaps 18.6 -> 8.4 s, sigkill
    # 13.5 -> 4.8 s, killed one-shot 15.5 -> 6 s; medians of 3, side by side). The hostile
    # cancel-while-lazy test (9 s) left the list: test and enable no longer wait its slow start out.
    # Since the SDK echo server a host runs is forked (tests/support/zygote_launcher.py), the library
    # example's first test is ~19 s (28 s scaled by its A/B, medians of 4: 14.6 -> 10.1 s), and its
    # error test, no_secret_leak and the stdio-faults tests (under 5 s now) left the list.
    "tests/api/test_openapi_live.py::test_schemathesis_finds_no_server_error_and_no_undocumented_status",  # 91 s
    "tests/e2e/test_instances.py",  # 42 s
    # ux39, measured alone (not in a full run): 47 s, 11 s of it a server's start, idle
    "tests/test_readme_newcomer.py::test_the_agents_python_snippet_prints_the_tools_of_a_server_slower_to",  # ~40 s
    "tests/service/test_tool_export.py",  # ~15 s each, measured alone (ux39)
    "tests/e2e/test_capabilities_e2e.py::test_a_card_left_pending_across_a_restart_of_serve_fails_its_call_and",  # 25 s
    "tests/e2e/test_shared_state.py::test_serve_and_a_library_script_refresh_a_rotating_refresh_token_once",  # 25 s
    "tests/e2e/test_database_cli.py::test_a_data_directory_migrates_whole_and_its_servers_stay_trusted_and_cal",  # 23 s
    "tests/e2e/test_instances_oauth.py::test_two_instances_refresh_a_rotating_refresh_token_once_and_both_stay",  # 20 s
    "tests/test_library_example.py::test_the_example_registers_calls_and_approves_and_a_second_run_calls_its",  # ~19 s
    "tests/e2e/test_readme_clients.py::test_readme_python_snippet_lists_and_calls_through_the_gateway",  # 18 s
    "tests/e2e/test_shared_state.py::test_a_library_scripts_approval_or_card_is_decided_in_serve_and_the_scrip",  # 17 s
    "tests/e2e/test_serve.py::test_a_second_serve_on_a_busy_port_fails_before_starting_anything",  # 16 s
    "tests/e2e/test_readme_clients.py::test_readme_inspector_cli_line_lists_the_gateway_tools",  # 15 s
    "tests/e2e/test_lifecycle.py::test_a_second_serve_is_refused_in_one_line_touching_nothing_and_takes_over_o",  # 13 s
    "tests/e2e/test_serve.py::test_an_agent_that_goes_away_mid_request_is_one_log_line_not_a_traceback",  # 13 s
    "tests/e2e/test_lifecycle.py::test_a_restart_reaps_what_serve_and_its_watchdog_left_when_both_were_killed",  # ~13 s
    "tests/cli/test_add_and_list.py::test_list_shows_live_state_and_tool_count_in_80_columns_without_cutting_i",  # 12 s
    "tests/cli/test_agents_cli.py::test_a_serve_of_another_data_directory_on_the_default_port_is_never_asked",  # 12 s
    "tests/e2e/test_sandbox_e2e.py::test_warm_up_lets_a_network_none_pypi_server_start_offline",  # 12 s
    "tests/e2e/test_capabilities_e2e.py::test_server_everything_tools_prompts_resources_and_approvals_through_",  # 10 s
    "tests/cli/test_agents_cli.py::test_the_stdio_bridge_finds_the_serve_of_its_data_directory_or_says_in_one_",  # 10 s
    "tests/e2e/test_lifecycle.py::test_sigkill_of_serve_leaves_no_server_process_and_a_restart_runs_exactly_o",  # ~10 s
    "tests/cli/test_agents_cli.py::test_approvals_of_a_running_host_are_listed_approved_and_denied",  # 9 s
    "tests/registry/test_naming.py::test_every_table_is_valid_unique_deterministic_and_reversible",  # 9 s
    "tests/hostile/test_catalogs_and_results.py::test_a_catalog_page_beyond_an_answers_read_cap_is_read_whole",  # 8 s
    "tests/cli/test_sandbox_cli.py::test_logs_mark_what_the_sandbox_refused",  # 8 s
    "tests/transports/test_clip.py::test_memory_stays_bounded_whatever_the_size_of_the_message",  # 8 s
    "tests/e2e/test_shared_state.py::test_serve_does_not_start_on_a_damaged_data_file_and_says_which_and_why",  # 8 s
    "tests/store/test_pg_store.py::test_every_lost_feed_connection_is_retried_at_once_not_after_the_last_outage",  # 8 s
    "tests/store/test_crash.py",  # 7 s
    "tests/cli/test_add_and_list.py::test_the_cli_test_counts_the_tools_serve_sees",  # 7 s
    "tests/e2e/test_real_servers.py::test_python_server_from_pypi_through_uvx",  # 7 s
    "tests/e2e/test_event_stream.py::test_an_open_event_stream_does_not_hold_up_stopping_the_host",  # 7 s
    "tests/e2e/test_database_cli.py::test_serve_refuses_an_unreachable_database_with_exit_10_and_creates_nothin",  # 7 s
    "tests/e2e/test_lifecycle.py::test_a_killed_one_shot_cli_command_leaves_no_server_process",  # ~7 s
    # browser tests (they run after all the others), longest first: setup + call + teardown (junit) in one
    # `-n 2 tests/web` run at 86dcdbd (a page lent again by the reused profile); a module's line is its
    # longest tests
    "tests/web/test_layout.py::test_screenshots_of_the_main_screens",  # 10 s (an own serve)
    "tests/web/test_hostile_server_ui.py",  # 7 s, 5 s, 4 s
    "tests/web/test_server_flow.py::test_a_stdio_server_from_the_uvx_template",  # 7 s
    "tests/web/test_authorization.py::test_authorize_opens_a_window_at_the_shown_issuer",  # 5 s
    "tests/web/test_approvals_and_cards.py",  # 4 s, 4 s, 4 s, 4 s, 3 s, 3 s
    "tests/web/test_layout.py::test_the_main_screens_fit_a_400_px_window",  # 4 s
    "tests/web/test_authorization.py::test_screenshot_of_the_authorization_tab",  # 4 s
    "tests/web/test_server_flow.py",  # 3 s, 3 s
    "tests/web/test_secrets.py::test_a_planted_secret_never_reaches_the_page",  # 3 s
    "tests/web/test_gateway_page.py::test_a_refused_name_and_the_token_limit",  # 3 s
    "tests/web/test_editor.py::test_two_pages_editing_one_server",  # 3 s
    "tests/web/test_prompts_and_resources.py::test_servers_without_prompts_or_not_ready",  # 3 s
    "tests/web/test_sandbox_page.py",  # 3 s, 2 s
    "tests/web/test_debugger.py",  # 2 s each
)
"""Node-id prefixes of the long tests, longest first; a test matches its first prefix."""


def long_first_rank(nodeid: str, prefixes: Sequence[str] = LONG_FIRST) -> int:
    """The sort key of a test: the index of the first of `prefixes` its node id starts with, or
    len(prefixes) for every other test, which keeps its collection order behind them (a stable sort)."""
    for rank, prefix in enumerate(prefixes):
        if nodeid.startswith(prefix):
            return rank
    return len(prefixes)


ONE_WORKER: tuple[str, ...] = (
    "tests/e2e/test_instances.py::",
    "tests/store/test_crash.py::",
    "tests/gateway/test_envelope_hop.py::",
)
"""Modules whose tests share one costly module fixture (a two-instance cluster, a forkserver, a host
with a ready server): each runs whole on one worker."""


class LongFirstScheduling(LoadScopeScheduling):
    """xdist's scope scheduling where every test is its own unit, except the modules of `ONE_WORKER`
    (one unit each). Units go out in collection order (with `--no-loadscope-reorder`; without it
    xdist puts the bigger units first), a worker holding at most a few at a time."""

    def _split_scope(self, nodeid: str) -> str:
        return work_unit(nodeid)


def work_unit(nodeid: str, one_worker: Sequence[str] = ONE_WORKER) -> str:
    """The unit of work a test belongs to: its module's prefix in `one_worker`, else its own node id."""
    return next((module for module in one_worker if nodeid.startswith(module)), nodeid)
