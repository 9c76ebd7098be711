# The claims issues 19 and 30 added to the oracle, each shown failing: a
# broken runtime (tests/variants/) at the case where its bug shows must be
# reported with the claim's code, and the reference runtime passes the same
# case.
#   G4   step/durable claims its step/end       no_post_step_checkpoint
#   G10  no call unanswered after SIGTERM       sigterm_drops_results
#   G5   a refused writer leaves the lock       refused_writer_truncates_lock,
#        intact; a third one is refused too     refused_writer_unlinks_lock
#   G5   one turn/start per turn, one header    turn_counter_from_completed,
#        per request id                         request_id_per_step
#   G5   the cut tail is kept in a cut file     cut_tail_discarded
#   G3   nested calls repaired under semantic   repair_ignores_nested
# Issue 30, the recovery path crashed too, each by a fault of `--faults all`:
#   G4   repair/durable claims the repair       repair_commit_unflushed
#   G5   the cut bytes are kept durably first   cut_before_keep
#   G6   a key does not make a tool safe        keyed_tool_called_safe
#   G1   a resumed request is checkpointed      resume_first_request_unflushed
#        (power loss in the resumed child, and a crash during recovery)
#   a recovery's file facts vs its calls        recovery_reports_unmade_fsync
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from faultlab import lab

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.realprocess

CAUGHT = [
    # variant, scenario, kill point, fault, the code the oracle must report
    ("no_post_step_checkpoint", "payment.toml", "request/logged#2", "sigkill",
     "SETTLED_STEP_LOST"),
    ("sigterm_drops_results", "payment.toml", "tool/durable#1", "sigterm",
     "GRACEFUL_CLOSE_MISSING"),
    ("refused_writer_truncates_lock", "payment.toml", "tool/durable#1", "second-writer",
     "SEQ_FORK"),
    ("refused_writer_unlinks_lock", "payment.toml", "tool/durable#1", "second-writer",
     "SEQ_FORK"),
    ("turn_counter_from_completed", "chat.toml", "model/chunk#1", "sigkill", "TURN_DUPLICATE"),
    ("request_id_per_step", "multi-turn.toml", "turn/started#2", "sigkill", "REQUEST_DUPLICATE"),
    ("cut_tail_discarded", "payment.toml", "flush/written#3", "torn-write", "CUT_TAIL_LOST"),
    ("repair_ignores_nested", "nested-parallel.toml", "tool/durable#4", "sigkill",
     "REPAIR_MISCLASSIFIED"),
    ("repair_commit_unflushed", "payment.toml", "flush/written#2", "power-loss", "REPAIR_LOST"),
    ("cut_before_keep", "payment.toml", "flush/written#3", "torn-write", "CUT_TAIL_LOST"),
    ("keyed_tool_called_safe", "annotations.toml", "tool/durable#5", "sigkill",
     "UNSAFE_RETRY_GUIDANCE"),
    ("resume_first_request_unflushed", "payment.toml", "flush/written#1", "power-loss",
     "REQUEST_ENVELOPE_LOST"),
    ("resume_first_request_unflushed", "payment.toml", "turn/started#1+model/chunk#1",
     "double-sigkill", "REQUEST_ENVELOPE_LOST"),
    ("recovery_reports_unmade_fsync", "payment.toml", "flush/written#2", "power-loss",
     "FSYNC_NOT_MADE"),
]  # fmt: skip


def _scenario(name: str) -> str:
    return str(ROOT / "scenarios" / name)


def test_each_catching_fault_is_in_all() -> None:
    assert {c[3] for c in CAUGHT} <= set(lab.parse_faults("all"))


@pytest.mark.parametrize(
    ("name", "scenario", "at", "fault", "code"), CAUGHT, ids=[f"{c[0]}-{c[3]}" for c in CAUGHT]
)
def test_a_runtime_breaking_the_claim_is_caught(
    tmp_path: Path, name: str, scenario: str, at: str, fault: str, code: str
) -> None:
    target = [sys.executable, str(ROOT / "tests" / "variants" / f"{name}.py")]
    result = lab.run_single(
        _scenario(scenario), at, fault=fault, target=target, workdir=tmp_path, timeout=60
    )
    assert result.verdict == "fail"
    assert code in result.codes, [v.message for v in result.violations]


@pytest.mark.parametrize(
    ("scenario", "at", "fault"), sorted({(c[1], c[2], c[3]) for c in CAUGHT})
)
def test_the_reference_runtime_passes_the_same_case(
    tmp_path: Path, scenario: str, at: str, fault: str
) -> None:
    result = lab.run_single(_scenario(scenario), at, fault=fault, workdir=tmp_path)
    assert result.verdict == "pass", [v.message for v in result.violations]


def test_the_two_writer_checks_are_told_apart(tmp_path: Path) -> None:
    # Truncating the lock: the second writer is refused and the lock still
    # holds, so only the lock file's bytes show it; unlinking it: the third
    # writer gets in.
    messages = {}
    for name in ("refused_writer_truncates_lock", "refused_writer_unlinks_lock"):
        target = [sys.executable, str(ROOT / "tests" / "variants" / f"{name}.py")]
        result = lab.run_single(_scenario("payment.toml"), "tool/durable#1",
                                fault="second-writer", target=target,
                                workdir=tmp_path / name)  # fmt: skip
        messages[name] = [v.message for v in result.violations]
    truncated, unlinked = messages.values()
    assert any("lock file session.jsonl.lock changed" in m for m in truncated)
    assert not any("third writer" in m for m in truncated)
    assert any("lock file session.jsonl.lock deleted" in m for m in unlinked)
    assert any("a third writer on the live session exited 0" in m for m in unlinked)


def test_under_semantic_a_nested_call_is_durable_and_unanswered_at_a_kill_point(
    tmp_path: Path,
) -> None:
    # What makes the nested repair reachable without --policy every-event: the
    # crashed log of the reference holds the nested tool/call and no result.
    result = lab.run_single(_scenario("nested-parallel.toml"), "tool/durable#4",
                            workdir=tmp_path)  # fmt: skip
    assert result.verdict == "pass"
    crashed = lab.read_any(result.artifacts["crashed"])
    nested = [e for e in crashed.events if e.type == "tool/call" and e.data.get("parentCallId")]
    answered = {e.data["callId"] for e in crashed.events if e.type == "tool/result"}
    assert nested and all(e.data["callId"] not in answered for e in nested)


def test_the_reference_runtime_passes_its_traced_recovery_as_an_exec_target(
    tmp_path: Path,
) -> None:
    # Exec'd, every recovery child runs under strace (the fork server's: one
    # case per scenario): the reference's own recovery facts agree with its
    # system calls, and no power loss during its cut, keep, repair or resume
    # loses anything.
    target = [sys.executable, "-m", "faultlab.runtime"]
    for fault in ("power-loss", "torn-write"):
        result = lab.run_single(_scenario("payment.toml"), "flush/written#3", fault=fault,
                                target=target, workdir=tmp_path / fault)  # fmt: skip
        assert result.verdict == "pass", [v.message for v in result.violations]
