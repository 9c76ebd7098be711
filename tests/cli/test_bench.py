# `faultlab bench --quick` runs every benchmark and writes its JSON; no test
# looks at a time, only at the figures being there and positive.
from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from faultlab.cli import main

RATIOS = {
    "crash_loop": ("fork_cases_per_s", "exec_cases_per_s", "floor_ms", "fork_vs_exec",
                   "fork_case_vs_floor", "on_request_cases_per_s", "fork_vs_on_request",
                   "processes_per_case", "fork_process_vs_floor", "fork_vs_cold",
                   "cold_ms_per_case"),
    "explore_jobs": ("jobs1_median", "jobs2_median", "speedup", "on_request_jobs1_median",
                     "on_request_jobs2_median", "on_request_speedup", "jobs1_cores",
                     "jobs2_cores", "on_request_jobs1_cores", "on_request_jobs2_cores",
                     "jobs1_cpu_ms_per_case", "jobs2_cpu_ms_per_case", "cold_jobs2_median",
                     "cold_vs_default_jobs2"),
    "log_reload": ("orjson_mb_per_s", "json_mb_per_s", "orjson_vs_json"),
    "checkpoint_cost": ("semantic_vs_turn_only_stream", "semantic_vs_turn_only_tools"),
    "double_crash": ("single_ms_per_case", "double_ms_per_case", "double_vs_single"),
    "syscall_trace": ("traced_vs_fork", "traced_vs_exec", "traced_exec_vs_traced_fork",
                      "traced_exec_vs_traced_fork_cpu"),
}  # fmt: skip


@pytest.mark.heavy(46)
@pytest.mark.realprocess
def test_bench_quick_writes_every_section(tmp_path: Path) -> None:
    out = tmp_path / "reports" / "bench.json"
    result = CliRunner().invoke(main, ["bench", "--quick", "--json", "--out", str(out)])
    assert result.exit_code == 0, result.stderr + (repr(result.exception) or "")
    written: dict[str, Any] = orjson.loads(out.read_bytes())
    assert orjson.loads(result.stdout) == written
    assert written["quick"] is True and written["machine"]["cpus"] >= 1
    for section, keys in RATIOS.items():
        for key in keys:
            value = written[section][key]
            assert isinstance(value, float) and value > 0, (section, key, value)
    cost = written["checkpoint_cost"]
    assert len(cost["runs"]) == 9 and all(run["per_second"] > 0 for run in cost["runs"])
    turn_only = [run for run in cost["runs"] if run["policy"] == "turn-only"]
    assert all(run["fsyncs"] >= 1 for run in turn_only)
    assert isinstance(cost["semantic_fsyncs_constant"], bool)
    assert written["explore_jobs"]["all_passed"] is True
    double = written["double_crash"]
    assert double["all_passed"] is True and 0 < double["double_cases"] <= double["bound"]
    assert double["single_cases"] > 0 and len(double["double_seconds"]) == double["rounds"]
    reload = written["log_reload"]
    assert reload["events"] > 0 and reload["bytes_per_event"] > 0
    # the informational log of larger events, measured the same way
    documents = reload["documents"]
    assert documents["shape"] == "documents" and documents["events"] > 0
    assert documents["bytes_per_event"] > reload["bytes_per_event"]
    for key in ("orjson_mb_per_s", "json_mb_per_s", "orjson_vs_json"):
        assert isinstance(documents[key], float) and documents[key] > 0, key
    assert len(documents["orjson_seconds"]) == len(documents["json_seconds"]) == reload["rounds"]
    checks = written["acceptance"]
    judged = {c["figure"]: c["value"] for c in checks if c["section"] == "log_reload"}
    assert judged == {k: reload[k] for k in ("orjson_vs_json", "orjson_mb_per_s")}
    assert {c["figure"] for c in written["acceptance"]} >= {"fork_vs_exec", "speedup"}
    # every judged figure with samples per round shows them: one per round
    spread = {c["figure"]: c for c in checks if "rounds" in c}
    assert set(spread) == {"fork_vs_exec", "fork_case_vs_floor", "orjson_vs_json",
                           "orjson_mb_per_s", "speedup"}  # fmt: skip
    for check in spread.values():
        rounds = written[check["section"]]["rounds"]
        assert len(check["rounds"]) == rounds and 0 <= check["rounds_met"] <= rounds, check
    assert len(written["crash_loop"]["floor_round_ms"]) == written["crash_loop"]["rounds"]
    headings = ("crash loop", "explore", "log reload", "larger events", "checkpoint cost",
                "crashes during recovery")  # fmt: skip
    for heading in (*headings, "fork / exec"):
        assert heading in result.stderr
    assert not list(out.parent.glob(".*.tmp"))  # the atomic write left no temp file


def test_a_benchmark_script_merges_its_section(tmp_path: Path) -> None:
    from faultlab.bench import write_json

    out = tmp_path / "bench.json"
    write_json(out, {"quick": True, "log_reload": {"orjson_vs_json": 2.0, "orjson_mb_per_s": 50.0}})
    write_json(out, {"quick": True, "explore_jobs": {"speedup": 1.7}}, merge=True)
    merged = orjson.loads(out.read_bytes())
    assert (
        merged["log_reload"]["orjson_vs_json"] == 2.0 and merged["explore_jobs"]["speedup"] == 1.7
    )
    assert [c["figure"] for c in merged["acceptance"]] == [
        "orjson_vs_json",
        "orjson_mb_per_s",
        "speedup",
    ]
