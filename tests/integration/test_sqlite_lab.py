# The crash lab on the SQLite backend: the oracle catches broken runtimes
# there too (a broken SQLite backend, and runtime bugs that do not depend on
# the backend), the reference passes the same cases, exploration with all
# faults passes and lists power-loss and torn-write as unsupported (in the
# summary, report, junit and on stderr), a run whose every fault is
# unsupported does not pass, the per-scenario `backend = "sqlite"` is used,
# and `faultlab inspect` reads SQLite sessions and artifacts.
from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from faultlab import lab
from faultlab.cli import main
from faultlab.lab.errors import LabUsageError

ROOT = Path(__file__).resolve().parents[2]
VARIANTS = ROOT / "tests" / "variants"
SCENARIOS = ROOT / "scenarios"
TINY_SQLITE = ROOT / "tests" / "scenarios" / "tiny-sqlite.toml"
pytestmark = pytest.mark.realprocess

CAUGHT = [
    # variant, scenario, kill point, fault, the code the oracle must report
    ("sqlite_no_writer_lock", "payment.toml", "tool/durable#1", "second-writer", "SEQ_FORK"),
    ("sqlite_commit_on_close", "chat.toml", "model/chunk#1", "sigkill", "REQUEST_ENVELOPE_LOST"),
    ("sqlite_commit_on_close", "chat.toml", "turn/durable#1", "sigkill", "COMPLETED_TURN_LOST"),
    # runtime bugs above the backend are caught on SQLite as on JSONL
    ("repair_swaps_classes", "mixed-parallel.toml", "tool/durable#1", "sigkill",
     "REPAIR_MISCLASSIFIED"),
    ("resume_reruns_tools", "payment.toml", "tool/effect#1", "sigkill", "SIDE_EFFECT_DUPLICATED"),
    ("repair_not_idempotent", "payment.toml", "tool/durable#1", "crash-in-repair",
     "REPAIR_NOT_IDEMPOTENT"),
]  # fmt: skip


def variant(name: str) -> list[str]:
    return [sys.executable, str(VARIANTS / f"{name}.py")]


@pytest.mark.parametrize(
    ("name", "scenario", "at", "fault", "code"), CAUGHT, ids=[f"{c[0]}-{c[4]}" for c in CAUGHT]
)
def test_the_oracle_catches_a_broken_runtime_on_sqlite(
    tmp_path: Path, name: str, scenario: str, at: str, fault: str, code: str
) -> None:
    result = lab.run_single(
        str(SCENARIOS / scenario), at, fault=fault, target=variant(name), backend="sqlite",
        workdir=tmp_path, timeout=60,
    )  # fmt: skip
    assert code in result.codes, (result.verdict, result.violations)


@pytest.mark.parametrize(("scenario", "at", "fault"), sorted({(c[1], c[2], c[3]) for c in CAUGHT}))
def test_the_reference_runtime_passes_the_same_cases_on_sqlite(
    tmp_path: Path, scenario: str, at: str, fault: str
) -> None:
    result = lab.run_single(
        str(SCENARIOS / scenario), at, fault=fault, backend="sqlite", workdir=tmp_path
    )
    assert result.passed, (result.verdict, result.violations)
    assert Path(result.artifacts.get("crashed", "x.sqlite")).suffix == ".sqlite"


def test_explore_all_faults_on_sqlite_passes_and_lists_the_unsupported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Without the system-call trace SQLite power-loss and torn-write have no
    # states (their bytes are rebuilt from the traced writes): unsupported.
    monkeypatch.setenv("FAULTLAB_GROUND_TRUTH", "facts")
    scenario = str(ROOT / "tests" / "scenarios" / "tiny.toml")
    run = CliRunner().invoke(main, [
        "explore", scenario, "--backend", "sqlite", "--faults", "all", "--jobs", "2",
        "--report-dir", str(tmp_path), "--json",
    ])  # fmt: skip
    assert run.exit_code == 0, run.stderr
    out = json.loads(run.stdout)
    assert out["passed"] and out["counts"]["unsupported"] == 3
    unsupported = {"power-loss", "torn-write", "corrupt-committed"}
    assert {u["fault"] for u in out["unsupported"]} == unsupported
    assert "UNSUPPORTED power-loss" in run.stderr and "UNSUPPORTED torn-write" in run.stderr
    report = tmp_path / "latest"
    summary = json.loads((report / "summary.json").read_text())
    assert summary["backend"] == "sqlite" and summary["passed"]
    assert {u["fault"] for u in summary["unsupported"]} == unsupported
    reasons = {u["fault"]: u["reason"] for u in summary["unsupported"]}
    assert (
        "no system-call trace" in reasons["power-loss"]
        and "no system-call trace" in reasons["torn-write"]
    )
    assert "committed row" in reasons["corrupt-committed"]
    text = (report / "report.md").read_text()
    assert "## Unsupported faults" in text and "- `power-loss` on tiny.toml" in text
    suite = ET.parse(report / "junit.xml").getroot().find("testsuite")
    assert suite is not None and suite.get("skipped") == "3"
    faults = {c["fault"] for c in out["cases"] if c["verdict"] == "pass"}
    assert faults >= {"sigkill", "io-error", "sigterm", "crash-in-repair", "second-writer"}
    # replay re-runs a case on the backend the run used (recorded in run.json)
    case_id = next(c["id"] for c in out["cases"] if c["id"].endswith("request/durable#1[sigkill]"))
    replay = CliRunner().invoke(main, ["replay", case_id, "--report-dir", str(report), "--json"])
    assert replay.exit_code == 0, replay.stderr
    replayed = json.loads(replay.stdout)
    assert replayed["sameAsRecorded"] and replayed["artifacts"]["crashed"].endswith(".sqlite")


def test_a_run_whose_every_fault_is_unsupported_does_not_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAULTLAB_GROUND_TRUTH", "facts")
    scenario = str(ROOT / "tests" / "scenarios" / "tiny.toml")
    run = CliRunner().invoke(main, [
        "explore", scenario, "--backend", "sqlite", "--faults", "power-loss,torn-write",
        "--no-report",
    ])  # fmt: skip
    assert run.exit_code == 1, run.stderr
    assert "UNSUPPORTED power-loss" in run.stderr


def test_one_unsupported_case_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAULTLAB_GROUND_TRUTH", "facts")
    with pytest.raises(LabUsageError, match="'power-loss' is not supported on backend sqlite"):
        lab.run_single(str(TINY_SQLITE), "flush/written#1", fault="power-loss", workdir=tmp_path)


def test_the_scenario_file_chooses_sqlite_and_inspect_reads_it(tmp_path: Path) -> None:
    result = lab.run_single(str(TINY_SQLITE), "tool/durable#1", workdir=tmp_path / "w")
    assert result.passed, result.violations
    crashed = Path(result.artifacts["crashed"])
    assert crashed.suffix == ".sqlite" and crashed.with_suffix(".dump.jsonl").is_file()
    run = CliRunner().invoke(main, ["inspect", str(crashed), "--scenario", str(TINY_SQLITE)])
    assert run.exit_code == 0, run.stderr
    assert "tool/call" in run.stderr and "TOOL_OUTCOME_UNKNOWN" in run.stderr
    session = tmp_path / "w" / "cases"
    (directory,) = [p / "session" for p in session.iterdir()]
    run = CliRunner().invoke(main, ["inspect", str(directory), "--json"])
    assert run.exit_code == 0, run.stderr
    data = json.loads(run.stdout)
    assert data["path"].endswith("session.sqlite") and data["events"] > 5
    assert not data["openTurn"]  # the resumed session finished its turn
