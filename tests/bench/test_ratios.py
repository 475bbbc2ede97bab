"""The benchmark runner's one-line figures (R-8.3): ratios computed from the harness's JSON, never timed."""

from __future__ import annotations

from typing import Any

from tests.bench.run_gateway_bench import ratios


def _side(cpu: float, n: int, errors: int = 0) -> dict[str, Any]:
    return {"server_cpu_ms_per_call": cpu, "n": n, "errors": errors}


def test_cpu_ratio_pools_every_concurrency_level_weighted_by_calls() -> None:
    result = {
        "levels": {
            "1": {"ratio_p50": 1.2, "throughput_ratio": 0.9, "via": _side(0.5, 100), "direct": _side(1.0, 100)},
            "64": {"ratio_p50": 1.5, "throughput_ratio": 0.8, "via": _side(0.2, 300), "direct": _side(1.0, 300, 1)},
        },
        "tools_list": {"direct": {"n": 5, "p50_ms": 10.0}, "via": {"n": 5, "p50_ms": 8.0, "tools": 1003}},
    }
    line = ratios(result, 90.4)
    # (0.5*100 + 0.2*300) / (1.0*100 + 1.0*300) = 110 / 400
    assert line == (
        "c1_ratio_p50=1.20 c1_tput_ratio=0.90 c64_tput_ratio=0.80 cpu_ratio=0.28 list_ratio=0.80 "
        "list_tools=1003 idle_rss_mb=90 errors=1"
    )
