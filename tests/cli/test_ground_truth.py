# Which ground truth a run used is said on the console, in summary.json and
# in report.md; a variant whose reported fsync went to the wrong descriptor
# fails `faultlab explore` with FSYNC_WRONG_FILE, and passes with tracing
# turned off (FAULTLAB_GROUND_TRUTH=facts), which is why the trace is on.
from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from faultlab.cli import main
from faultlab.lab.process.reference import NOT_TRACED

ROOT = Path(__file__).resolve().parents[2]
CHAT = str(ROOT / "scenarios" / "chat.toml")
WRONG_FD = f"{sys.executable} {ROOT / 'tests' / 'variants' / 'fsync_wrong_fd.py'}"
pytestmark = [
    pytest.mark.realprocess,
    pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace (.ci/run installs it)"),
]


def explore(
    tmp_path: Path, *extra: str, env: dict[str, str] | None = None, faults: str = "power-loss"
) -> tuple[int, str, dict[str, Any]]:
    reports = tmp_path / "reports"
    args = ["explore", CHAT, "--faults", faults, "--report-dir", str(reports), *extra]
    result = CliRunner().invoke(main, args, env=env)
    summary = orjson.loads((reports / "latest" / "summary.json").read_bytes())
    report = (reports / "latest" / "report.md").read_text()
    assert summary["groundTruth"][0]["scenario"] == "chat.toml"
    line = next(x for x in result.stderr.splitlines() if x.startswith("ground truth:"))
    assert f"- {line}" in report
    return result.exit_code, line, summary


def test_the_reference_runtime_is_judged_on_its_system_calls(tmp_path: Path) -> None:
    code, line, summary = explore(tmp_path)
    assert code == 0
    assert line == "ground truth: system calls (strace) for 1 of 1 scenario(s)"
    assert summary["groundTruth"] == [
        {"scenario": "chat.toml", "groundTruth": "syscalls", "note": ""}
    ]


def test_a_wrong_descriptor_fails_explore_and_only_the_trace_sees_it(tmp_path: Path) -> None:
    code, _line, summary = explore(tmp_path / "on", "--target", WRONG_FD)
    assert code == 1
    assert summary["codes"]["FSYNC_WRONG_FILE"] >= 1
    code, line, summary = explore(
        tmp_path / "off", "--target", WRONG_FD, env={"FAULTLAB_GROUND_TRUTH": "facts"}
    )
    assert code == 0 and "FSYNC_WRONG_FILE" not in summary["codes"]
    assert summary["groundTruth"][0]["groundTruth"] == "facts"
    assert "FAULTLAB_GROUND_TRUTH=facts" in line


def test_a_bad_ground_truth_is_a_one_line_usage_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main, ["explore", CHAT, "--faults", "power-loss", "--no-report"],
        env={"FAULTLAB_GROUND_TRUTH": "maybe"},
    )  # fmt: skip
    assert result.exit_code == 2
    assert "FAULTLAB_GROUND_TRUTH='maybe'" in result.stderr
    assert "Traceback" not in result.stderr


def test_no_trace_is_taken_when_no_planned_fault_reads_one(tmp_path: Path) -> None:
    # sigkill and sigterm are judged on the log, the ledger and the model's
    # requests: the reference run is not traced, and the report says why
    # (issue 34); add power-loss and it is.
    code, line, summary = explore(tmp_path / "kill", faults="sigkill,sigterm")
    assert code == 0
    assert line == f"ground truth: no file facts needed ({NOT_TRACED})"
    assert summary["groundTruth"] == [
        {"scenario": "chat.toml", "groundTruth": "facts", "note": NOT_TRACED}
    ]
    code, line, summary = explore(tmp_path / "both", faults="sigkill,power-loss")
    assert code == 0 and summary["groundTruth"][0]["groundTruth"] == "syscalls"
