# The faults beyond SIGKILL that need a live child (io-error,
# cancel-in-checkpoint, sigterm, crash-in-repair, second-writer): the
# reference runtime passes them, and for each one a broken runtime variant
# (tests/variants/) makes the oracle report the fault's code.
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from faultlab import lab
from faultlab.lab.faults.live import LIVE_FAULTS

ROOT = Path(__file__).resolve().parents[2]
PAYMENT = str(ROOT / "scenarios" / "payment.toml")
pytestmark = pytest.mark.realprocess

CAUGHT = [
    # variant, kill point, fault, the code the oracle must report
    ("ignores_failed_flush", "request/logged#1", "io-error", "DISPATCH_AFTER_FAILED_CHECKPOINT"),
    ("torn_batch_no_truncate", "step/logged#1", "io-error", "SEQ_DUPLICATE"),
    ("no_cancel_recheck", "tool/logged#1", "cancel-in-checkpoint", "DISPATCH_AFTER_CANCEL"),
    ("dies_on_sigterm", "model/chunk#1", "sigterm", "GRACEFUL_CLOSE_MISSING"),
    ("repair_not_idempotent", "tool/durable#1", "crash-in-repair", "REPAIR_NOT_IDEMPOTENT"),
    ("no_writer_lock", "tool/durable#1", "second-writer", "SEQ_FORK"),
]


@pytest.mark.parametrize(("name", "at", "fault", "code"), CAUGHT, ids=[c[0] for c in CAUGHT])
def test_a_broken_runtime_fails_the_fault(
    tmp_path: Path, name: str, at: str, fault: str, code: str
) -> None:
    target = [sys.executable, str(ROOT / "tests" / "variants" / f"{name}.py")]
    result = lab.run_single(PAYMENT, at, fault=fault, target=target, workdir=tmp_path)
    assert result.verdict == "fail"
    assert code in result.codes, [v.message for v in result.violations]


@pytest.mark.parametrize(("at", "fault"), [(c[1], c[2]) for c in CAUGHT])
def test_the_reference_runtime_passes_the_same_cases(tmp_path: Path, at: str, fault: str) -> None:
    result = lab.run_single(PAYMENT, at, fault=fault, workdir=tmp_path)
    assert result.verdict == "pass", [v.message for v in result.violations]


def test_every_live_fault_passes_on_the_reference_runtime(tmp_path: Path) -> None:
    result = lab.explore_paths([PAYMENT], faults=LIVE_FAULTS, jobs=2, workdir=tmp_path)
    faults = {r.case.fault for r in result.results}
    assert set(LIVE_FAULTS) <= faults
    assert [(r.case.id, r.codes) for r in result.results if not r.passed] == []


def test_turn_only_lets_a_body_run_after_cancellation(tmp_path: Path) -> None:
    # turn-only has no tool checkpoint to recheck the signal in.
    result = lab.run_single(PAYMENT, "tool/logged#1", fault="cancel-in-checkpoint",
                            policy="turn-only", workdir=tmp_path)  # fmt: skip
    assert "DISPATCH_AFTER_CANCEL" in result.codes


def test_a_fault_at_an_occurrence_where_it_does_not_apply_is_a_usage_error(
    tmp_path: Path,
) -> None:
    from faultlab.lab.errors import LabUsageError

    # (At a boundary the fault is never injected at, it is refused before the
    # reference run: tests/hostile/test_hostile_targets.py.)
    with pytest.raises(LabUsageError, match="applies at: tool/logged#1"):
        lab.run_single(PAYMENT, "tool/logged#5", fault="cancel-in-checkpoint",
                       workdir=tmp_path)  # fmt: skip


def test_a_park_long_enough_to_reorder_tool_results_is_no_fork(tmp_path: Path) -> None:
    # At nested-parallel's tool/durable#3 the nested lookup's 300 ms latency
    # is running; the second and third writers start slowly (1.2 s in all),
    # so the parked first writer's lookup returns before ping when it goes
    # on: the same events in another valid order, not a forked log (issue 30:
    # the Node runtime's SEQ_FORK on a loaded machine).  A broken lock is
    # still caught (no_writer_lock above).
    target = [sys.executable, str(ROOT / "tests" / "integration" / "targets" / "slow_resume.py")]
    scenario = str(ROOT / "scenarios" / "nested-parallel.toml")
    result = lab.run_single(scenario, "tool/durable#3", fault="second-writer", target=target,
                            workdir=tmp_path)  # fmt: skip
    assert result.verdict == "pass", [v.message for v in result.violations]
