"""The long-tests-first order of the suite (issue 16, tests/support/ordering.py) names real tests."""

from __future__ import annotations

import re
from pathlib import Path

from tests.support.ordering import LONG_FIRST, ONE_WORKER, long_first_rank, work_unit

ROOT = Path(__file__).parents[1]


def test_every_long_first_prefix_names_an_existing_module_and_test() -> None:
    missing: list[str] = []
    for prefix in (*LONG_FIRST, *ONE_WORKER):
        module, _, name = prefix.partition("::")
        path = ROOT / module
        source = path.read_text() if path.is_file() else ""
        if not source or (name and not re.search(rf"^(async )?def {re.escape(name)}", source, re.MULTILINE)):
            missing.append(prefix)
    assert missing == [], f"renamed or removed: update tests/support/ordering.py: {missing}"


def test_a_listed_test_ranks_by_its_first_prefix_and_others_rank_after_all() -> None:
    prefixes = ("tests/a.py::test_slow", "tests/b.py", "tests/a.py")
    assert long_first_rank("tests/a.py::test_slow_one[x]", prefixes) == 0
    assert long_first_rank("tests/b.py::test_any", prefixes) == 1
    assert long_first_rank("tests/a.py::test_fast", prefixes) == 2
    assert long_first_rank("tests/c.py::test_other", prefixes) == 3


def test_a_one_worker_module_is_one_unit_and_every_other_test_its_own() -> None:
    modules = ("tests/a.py::",)
    assert work_unit("tests/a.py::test_one[x]", modules) == work_unit("tests/a.py::test_two", modules) == "tests/a.py::"
    assert work_unit("tests/ab.py::test_one", modules) == "tests/ab.py::test_one"
