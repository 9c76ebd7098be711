# `faultlab.bench.report`: each acceptance check carries the figure of every
# round next to its median, and in how many rounds the target was met.
from __future__ import annotations

from typing import Any

from faultlab.bench.report import acceptance, table

CRASH_LOOP = {
    "cases": 10,
    # per round: 23, 25 and 27 ms a fork case; floors of 3.0, 2.5 and 3.0 ms
    "fork_seconds": [0.23, 0.25, 0.27],
    "exec_seconds": [4.6, 2.5, 5.4],
    "floor_round_ms": [3.0, 2.5, 3.0],
    "fork_vs_exec": 18.4,
    "fork_case_vs_floor": 8.6,
}
LOG_RELOAD = {
    "megabytes": 100.0,
    "orjson_seconds": [1.0, 0.8],
    "json_seconds": [2.8, 2.8],
    "orjson_vs_json": 3.1,
    "orjson_mb_per_s": 111.0,
}
# Tuples, as a report holds them before it is written (its JSON has lists).
EXPLORE_JOBS = {"jobs1_seconds": (20.0, 19.0), "jobs2_seconds": (12.0, 13.0), "speedup": 1.56}


# What the crash loop's table needs besides the figures the checks read.
_CRASH_LOOP_TEXT = {
    "scenario": "payment.toml",
    "rounds": 3,
    "fork_cases_per_s": 40.0,
    "fork_ms_per_case": 25.0,
    "exec_cases_per_s": 2.0,
    "exec_ms_per_case": 460.0,
    "on_request_cases_per_s": 30.0,
    "on_request_ms_per_case": 33.0,
    "floor_ms": 2.9,
    "floor_repetitions": 3000,
    "fork_process_vs_floor": 2.9,
    "processes_per_case": 3.0,
    "fork_vs_on_request": 1.3,
}


def test_targets_read_as_the_issue_states_them_and_a_bound_is_met() -> None:
    report = {
        "offline_states": {"figures": {"ratio": 100.0}},
        "crash_loop": {"fork_vs_exec": 14.9, "fork_case_vs_floor": 8.0},
        "checkpoint_cost": {"semantic_fsyncs_constant": False, "semantic_vs_turn_only_stream": 0.9},
        "log_reload": {"orjson_vs_json": 3.0, "orjson_mb_per_s": 99.9},
        "explore_jobs": {"speedup": 1.6},
    }
    judged = [(c["figure"], c["target"], c["met"]) for c in acceptance(report)]
    assert judged == [
        ("offline_vs_real", ">= 100x", True),
        ("fork_vs_exec", ">= 15x", False),
        ("fork_case_vs_floor", "<= 8x", True),
        ("semantic_fsyncs_constant", "same count", False),
        ("semantic_vs_turn_only_stream", ">= 0.9x", True),
        ("orjson_vs_json", ">= 3x", True),
        ("orjson_mb_per_s", ">= 100 MB/s", False),
        ("speedup", ">= 1.6x", True),
    ]


def _checks(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {check["figure"]: check for check in acceptance(report)}


def test_each_check_holds_the_figure_of_every_round() -> None:
    checks = _checks(
        {"crash_loop": CRASH_LOOP, "log_reload": LOG_RELOAD, "explore_jobs": EXPLORE_JOBS}
    )
    rounded = {name: [round(x, 3) for x in c["rounds"]] for name, c in checks.items()}
    assert rounded == {
        "fork_vs_exec": [20.0, 10.0, 20.0],
        "fork_case_vs_floor": [7.667, 10.0, 9.0],
        "orjson_vs_json": [2.8, 3.5],
        "orjson_mb_per_s": [100.0, 125.0],
        "speedup": [1.667, 1.462],
    }
    met = {name: c["rounds_met"] for name, c in checks.items()}
    assert met == {
        "fork_vs_exec": 2,  # >= 15x
        "fork_case_vs_floor": 1,  # <= 8x
        "orjson_vs_json": 1,  # >= 3x
        "orjson_mb_per_s": 2,  # >= 100 MB/s, the bound itself included
        "speedup": 1,  # >= 1.6x
    }
    # the verdict is still the median's
    assert [checks[name]["met"] for name in ("fork_case_vs_floor", "speedup")] == [False, False]


def test_the_table_shows_the_spread_beside_the_verdict() -> None:
    lines = table({"crash_loop": {**CRASH_LOOP, **_CRASH_LOOP_TEXT}})
    (line,) = [line for line in lines if "fork_case_vs_floor" in line]
    assert line.endswith("NOT met (rounds 7.667-10.0, met in 1 of 3)"), line


def test_a_report_without_samples_per_round_is_judged_on_its_medians_alone() -> None:
    old = {key: value for key, value in CRASH_LOOP.items() if key != "floor_round_ms"}
    checks = _checks({"crash_loop": old, "explore_jobs": {"speedup": 1.7}})
    assert "rounds" not in checks["fork_case_vs_floor"] and "rounds" not in checks["speedup"]
    assert checks["fork_vs_exec"]["rounds_met"] == 2  # its own samples are there
    assert checks["speedup"]["met"] is True


def test_samples_that_do_not_pair_up_give_no_rounds() -> None:
    for broken in (
        {"jobs1_seconds": [20.0, 19.0], "jobs2_seconds": [12.0]},  # one round missing
        {"jobs1_seconds": [20.0, 0.0], "jobs2_seconds": [12.0, 13.0]},  # not positive
        {"jobs1_seconds": [20.0, True], "jobs2_seconds": [12.0, 13.0]},  # not a number
        {"jobs1_seconds": "20", "jobs2_seconds": [12.0]},
    ):
        (check,) = acceptance({"explore_jobs": {**broken, "speedup": 1.5}})
        assert "rounds" not in check, broken
