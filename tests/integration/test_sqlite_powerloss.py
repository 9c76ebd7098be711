# SQLite power-loss and torn-write from the system-call trace, with real
# processes and the real strace: the states rebuilt from the traced written
# bytes hold exactly what was committed (and a torn WAL frame is dropped by
# SQLite's own recovery), the reference runtime passes every case and its
# torn-write cases recover a frame cut at a page, and a backend running with
# `PRAGMA synchronous=OFF` (which a SIGKILL cannot show) is caught.
from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from faultlab import lab
from faultlab.lab.faults.powerloss import crash_states

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "scenarios"
OFF = [sys.executable, str(ROOT / "tests" / "variants" / "sqlite_synchronous_off.py")]
pytestmark = [
    pytest.mark.realprocess,
    pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace (.ci/run installs it)"),
]


def test_the_rebuilt_states_hold_exactly_the_committed_rows(tmp_path: Path) -> None:
    scenario = str(SCENARIOS / "payment.toml")
    reference = lab.reference_run(scenario, workdir=tmp_path, backend="sqlite")
    assert reference.ground_truth == "syscalls", reference.ground_truth_note
    assert reference.written, "the trace kept no written bytes"
    final = [e.seq for e in reference.log.events]
    batches = [m for m in reference.trace if m.get("boundary") == "flush/written"]
    assert len(batches) >= 3
    for batch in batches:
        occurrence = f"flush/written#{batch['n']}"
        (synced,) = crash_states(reference, occurrence, torn=False)
        view = synced.view(reference.log.path)
        # the batch at the crash point is not committed yet; every earlier one is
        assert [e.seq for e in view.events] == final[: batch["first"]], occurrence
        assert synced.files is not None and {n for n, _ in synced.files} <= {
            "session.sqlite", "session.sqlite-wal", "session.sqlite-journal",
        }  # fmt: skip
        torn = crash_states(reference, occurrence, torn=True)
        for state in torn:
            events = [e.seq for e in state.view(reference.log.path).events]
            assert events in (final[: batch["first"]], final[: batch["last"] + 1]), state.label
        if batch["n"] > 1:  # a WAL frame (header + page) is written after the first
            assert any("(page)" in s.label for s in torn)
            # all the frame's writes survived: the commit is there without its fsync
            whole = [s for s in torn if s.label.startswith("torn@") and "(page)" not in s.label]
            events = [e.seq for e in whole[-1].view(reference.log.path).events]
            assert events == final[: batch["last"] + 1], whole[-1].label


def test_the_reference_runtime_passes_every_sqlite_power_case(tmp_path: Path) -> None:
    result = lab.explore_paths(
        [SCENARIOS / "chat.toml"], faults=("power-loss", "torn-write"), backend="sqlite",
        workdir=tmp_path,
    )  # fmt: skip
    cases = [r for r in result.results if r.case.fault in ("power-loss", "torn-write")]
    assert cases and all(r.verdict == "pass" for r in cases), [
        (r.case.id, r.verdict, r.violations) for r in cases if r.verdict != "pass"
    ]
    assert not result.unsupported
    assert all("ground truth: system calls" in r.detail for r in cases)
    torn = [r for r in cases if r.case.fault == "torn-write"]
    assert sum("(page)" in r.detail for r in torn) >= len(torn) - 1


def test_synchronous_off_is_caught_by_power_loss_not_by_sigkill(tmp_path: Path) -> None:
    scenario = str(SCENARIOS / "chat.toml")
    caught = lab.run_single(
        scenario, "flush/written#4", fault="power-loss", target=OFF, backend="sqlite",
        workdir=tmp_path / "power",
    )  # fmt: skip
    assert caught.verdict == "fail"
    assert {"REQUEST_ENVELOPE_LOST", "COMPLETED_TURN_LOST"} <= set(caught.codes)
    # a SIGKILL at the same point loses nothing: the kernel still had the bytes
    killed = lab.run_single(
        scenario, "flush/written#4", target=OFF, backend="sqlite", workdir=tmp_path / "kill"
    )
    assert killed.passed, killed.violations


@pytest.mark.parametrize("fault", ["torn-write", "sigkill"])
def test_sqlite_cases_are_deterministic(tmp_path: Path, fault: str) -> None:
    # A database stores its times as binary REALs: two faithful runs are
    # compared by the reader's normalised JSONL rendering, not by raw bytes.
    result = lab.run_single(
        str(SCENARIOS / "chat.toml"), "flush/written#2", fault=fault, backend="sqlite",
        workdir=tmp_path, check_determinism=True,
    )  # fmt: skip
    assert result.passed, result.violations
