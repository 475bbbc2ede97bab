"""`serve` freezes its startup heap out of the garbage collector (R-8.3)."""

from __future__ import annotations

import gc

from mcp_center.app import freeze_startup_heap


def test_the_startup_heap_leaves_the_collector_and_later_garbage_is_still_collected() -> None:
    gc.unfreeze()
    try:
        freeze_startup_heap()
        frozen = gc.get_freeze_count()
        assert frozen > 10_000  # this process's modules and objects: what each full collection walked

        class Node:
            def __init__(self) -> None:
                self.me = self

        Node()  # a cycle made after the freeze: garbage the collector still finds
        assert gc.collect() >= 1
        assert gc.get_freeze_count() == frozen
    finally:
        gc.unfreeze()
        gc.freeze()  # what this test process had frozen stays out of the collector (tests/conftest.py)
