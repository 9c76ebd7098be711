# Every guarantee the oracle checks, shown failing: a deliberately broken
# runtime (tests/variants/, each documenting the bug it imitates) is killed
# where its bug shows, and the lab must report that guarantee's code.  Plus
# the lab's own verdicts for targets it cannot trust: DRIFT and CHILD_HUNG.
from __future__ import annotations

import sys
from pathlib import Path

import psutil
import pytest

from faultlab import lab

ROOT = Path(__file__).resolve().parents[2]
VARIANTS = ROOT / "tests" / "variants"
SCENARIOS = ROOT / "scenarios"
pytestmark = pytest.mark.realprocess

CAUGHT = [
    # variant, scenario, kill point, the code the oracle must report
    ("no_request_checkpoint", "chat.toml", "model/chunk#1", "REQUEST_ENVELOPE_LOST"),
    ("tool_checkpoint_after_body", "payment.toml", "tool/effect#1", "TOOL_INTENT_LOST"),
    ("repair_swaps_classes", "mixed-parallel.toml", "tool/durable#1", "REPAIR_MISCLASSIFIED"),
    ("fsync_without_flush", "chat.toml", "step/durable#1", "SETTLED_STEP_LOST"),
    ("fsync_without_flush", "chat.toml", "turn/durable#1", "COMPLETED_TURN_LOST"),
    ("compaction_on_resume", "chat.toml", "step/durable#1", "LOG_NOT_PREFIX"),
    ("repair_says_safe", "payment.toml", "tool/durable#1", "UNSAFE_RETRY_GUIDANCE"),
    ("resume_reruns_tools", "payment.toml", "tool/effect#1", "SIDE_EFFECT_DUPLICATED"),
    ("repair_leaves_calls_dangling", "payment.toml", "tool/durable#1", "PROVIDER_INVALID_HISTORY"),
    ("repair_not_idempotent", "payment.toml", "tool/durable#1", "REPAIR_NOT_IDEMPOTENT"),
]


def variant(name: str) -> list[str]:
    return [sys.executable, str(VARIANTS / f"{name}.py")]


@pytest.mark.parametrize(
    ("name", "scenario", "at", "code"), CAUGHT, ids=[f"{c[0]}-{c[3]}" for c in CAUGHT]
)
def test_the_oracle_catches_a_broken_runtime(
    tmp_path: Path, name: str, scenario: str, at: str, code: str
) -> None:
    result = lab.run_single(
        str(SCENARIOS / scenario), at, target=variant(name), workdir=tmp_path, timeout=60
    )
    assert result.verdict == "fail"
    assert code in result.codes, [v.message for v in result.violations]


@pytest.mark.parametrize(("scenario", "at"), [(s, a) for _n, s, a, _c in CAUGHT][:4])
def test_the_reference_runtime_passes_the_same_cases(
    tmp_path: Path, scenario: str, at: str
) -> None:
    result = lab.run_single(str(SCENARIOS / scenario), at, workdir=tmp_path, timeout=60)
    assert result.verdict == "pass", [v.message for v in result.violations]


def test_a_target_that_behaves_differently_under_test_drifts(tmp_path: Path) -> None:
    result = lab.run_single(
        str(SCENARIOS / "mixed-parallel.toml"),
        "tool/durable#2",
        target=variant("nondeterministic"),
        workdir=tmp_path,
        timeout=60,
    )
    assert result.verdict == "drift" and result.codes == ("DRIFT",)
    assert "differs from the reference" in result.violations[0].message


def test_a_target_that_hangs_is_reported_and_killed(tmp_path: Path) -> None:
    result = lab.run_single(
        str(SCENARIOS / "chat.toml"), "model/chunk#1", target=variant("hangs"),
        workdir=tmp_path, timeout=5,
    )  # fmt: skip
    # (5 s, not 2: under a loaded suite one run in ~1700 came out "error".)
    assert (result.verdict, result.codes) == ("hung", ("CHILD_HUNG",)), result.violations
    leftovers = [
        p for p in psutil.process_iter(["cmdline"])
        if str(VARIANTS / "hangs.py") in " ".join(p.info["cmdline"] or [])
    ]  # fmt: skip
    assert leftovers == []
