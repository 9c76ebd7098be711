# The lab end to end through the CLI, on small scenarios: explore under the
# semantic policy passes with a valid JUnit file; turn-only fails with the
# codes it predicts; shards partition the cases exactly; replay reproduces a
# recorded verdict.
from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from faultlab.cli import main

HERE = Path(__file__).resolve().parents[1]
TINY = str(HERE / "scenarios" / "tiny.toml")
TINY_TOOL = str(HERE / "scenarios" / "tiny-tool.toml")
pytestmark = pytest.mark.realprocess


def invoke(*args: str) -> tuple[int, Any, str]:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code in (0, 1), result.stderr  # never a usage or internal error
    data = orjson.loads(result.stdout) if result.stdout.strip() else None
    return result.exit_code, data, result.stderr


@pytest.fixture(scope="module")
def semantic_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, Any, Path]:
    reports = tmp_path_factory.mktemp("reports")
    code, data, _stderr = invoke(
        "explore", TINY, TINY_TOOL, "--jobs", "2", "--json", "--report-dir", str(reports)
    )
    return code, data, reports


def test_semantic_explore_passes_and_reaches_every_declared_boundary(
    semantic_run: tuple[int, Any, Path],
) -> None:
    code, data, _reports = semantic_run
    assert code == 0, [c for c in data["cases"] if c["verdict"] != "pass"]
    assert data["passed"] is True
    coverage = [c for c in data["cases"] if c["occurrence"] == "coverage"]
    assert len(coverage) == 2 and all(c["verdict"] == "pass" for c in coverage)
    assert len(data["cases"]) > 30


def test_the_report_is_complete_and_its_junit_counts_every_case(
    semantic_run: tuple[int, Any, Path],
) -> None:
    _code, data, reports = semantic_run
    run = reports / "latest"
    assert run.is_symlink() and (run / "report.md").is_file()
    summary = orjson.loads((run / "summary.json").read_bytes())
    cases = [orjson.loads(line) for line in (run / "cases.jsonl").read_bytes().splitlines()]
    suite = ET.parse(run / "junit.xml").getroot().find("testsuite")
    assert suite is not None
    testcases = suite.findall("testcase")
    assert summary["cases"] == len(cases) == len(testcases) == int(suite.get("tests", "-1"))
    assert suite.get("failures") == "0" and suite.get("errors") == "0"
    assert [c["id"] for c in cases] == [c["id"] for c in data["cases"]]
    assert not list(reports.glob(".*.tmp"))  # written atomically, nothing half-done left


@pytest.fixture(scope="module")
def turn_only_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, Any, Path]:
    reports = tmp_path_factory.mktemp("reports")
    code, data, _stderr = invoke(
        "explore",
        TINY_TOOL,
        "--policy",
        "turn-only",
        "--jobs",
        "2",
        "--json",
        "--report-dir",
        str(reports),
    )
    return code, data, reports


def test_turn_only_fails_with_the_codes_the_design_predicts(
    turn_only_run: tuple[int, Any, Path],
) -> None:
    code, data, reports = turn_only_run
    assert code == 1
    codes = {code for case in data["cases"] for code in case["codes"]}
    assert {"REQUEST_ENVELOPE_LOST", "TOOL_INTENT_LOST"} <= codes
    recorded = [
        orjson.loads(line)
        for line in (reports / "latest" / "cases.jsonl").read_bytes().splitlines()
    ]
    failing = [c for c in recorded if c["verdict"] == "fail"]
    assert failing and all(c["replay"].startswith("faultlab replay ") for c in failing)
    for case in failing:
        kept = {p.name for p in (reports / "latest" / case["artifacts"]["dir"]).iterdir()}
        assert {"crashed.jsonl", "repaired.jsonl", "trace.jsonl", "replay.sh", "repro.py"} <= kept


def test_replay_reproduces_the_recorded_verdicts(turn_only_run: tuple[int, Any, Path]) -> None:
    _code, data, reports = turn_only_run
    failing = next(c for c in data["cases"] if c["verdict"] == "fail")
    passing = next(c for c in data["cases"] if c["verdict"] == "pass")
    code, replayed, stderr = invoke("replay", failing["id"], "--report-dir", str(reports), "--json")
    assert code == 1 and replayed["sameAsRecorded"], stderr
    assert replayed["codes"] == failing["codes"]
    code, replayed, stderr = invoke("replay", passing["id"], "--report-dir", str(reports), "--json")
    assert code == 0 and replayed["sameAsRecorded"], stderr


def test_shards_partition_the_cases_exactly_and_in_order() -> None:
    code, whole, _ = invoke("explore", TINY, "--json", "--no-report")
    assert code == 0
    ids = [c["id"] for c in whole["cases"]]
    shards = []
    for k in (1, 2, 3):
        code, part, _ = invoke("explore", TINY, "--shard", f"{k}/3", "--json", "--no-report")
        assert code == 0
        shards.append([c["id"] for c in part["cases"]])
    merged = [shards[i % 3][i // 3] for i in range(len(ids))]
    assert merged == ids
    assert sorted(i for shard in shards for i in shard) == sorted(ids) and len(set(ids)) == len(ids)


def test_repro_script_reproduces_a_failure_standalone(
    turn_only_run: tuple[int, Any, Path], tmp_path: Path
) -> None:
    _code, data, reports = turn_only_run
    failing = next(c for c in data["cases"] if c["verdict"] == "fail")
    line = next(
        orjson.loads(raw)
        for raw in (reports / "latest" / "cases.jsonl").read_bytes().splitlines()
        if orjson.loads(raw)["id"] == failing["id"]
    )
    repro = reports / "latest" / line["artifacts"]["dir"] / "repro.py"
    done = subprocess.run([sys.executable, str(repro)], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "fail" in done.stdout


def test_inspect_shows_the_repair_a_crashed_log_needs(tmp_path: Path) -> None:
    from faultlab.lab.process.spawn import Child

    argv = [sys.executable, "-m", "faultlab.runtime", TINY_TOOL, "--session-dir",
            str(tmp_path / "s")]  # fmt: skip
    with Child(argv, stderr_path=tmp_path / "err", armed="tool/effect#1") as child:
        assert child.run_until_parked_or_exit(60) is not None
        child.kill()
        child.wait(30)
    code, data, stderr = invoke("inspect", str(tmp_path / "s"), "--scenario", TINY_TOOL, "--json")
    assert code == 0, stderr
    assert data["openTurn"] is True and data["healthy"] is True
    assert [(r["code"], r["retry"]) for r in data["expectedRepair"]] == [
        ("TOOL_OUTCOME_UNKNOWN", "verify")
    ]
    assert "crash repair would append" in stderr


def test_two_scenarios_with_one_file_name_are_refused(tmp_path: Path) -> None:
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "x.toml").write_text(Path(TINY).read_text())
    result = CliRunner().invoke(
        main, ["explore", str(tmp_path / "a" / "x.toml"), str(tmp_path / "b" / "x.toml")]
    )
    assert result.exit_code == 2 and "same file name" in result.stderr
