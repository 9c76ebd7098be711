# Power loss during a recovery child's run (faultlab/lab/faults/recoverystates.py,
# judged by faultlab/lab/faults/recoverypower.py), on hand-built runs: the
# repair child of a log with a torn tail that keeps the tail, then cuts it,
# then commits its repair, and the same run with each of issue 30's bugs (the
# tail cut before it is kept, the kept copy never fsynced, the repair reported
# durable before its flush).  No process is started.
from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
from power_runs import Run

from faultlab.lab.faults.recoverypower import check_recovery, traces_recovery
from faultlab.lab.faults.recoverystates import RecoveryRun, recovery_states
from faultlab.lab.oracle.case import Case
from faultlab.lab.process.reference import LabOptions
from faultlab.lab.process.target import command_target, reference_target

DIR = "/s"
LOG = f"{DIR}/session.jsonl"
HEADER = b'{"type":"session","format":1,"id":"s","createdAt":1.0}\n'


def line(seq: int, kind: str, data: dict[str, Any]) -> bytes:
    return orjson.dumps({"seq": seq, "type": kind, "time": 1.0, "data": data}) + b"\n"


VALID = HEADER + line(0, "turn/start", {"turn": 0}) + line(1, "user/message", {"turn": 0})
TAIL = b'{"seq":2,"type":"st'  # torn by the power loss the recovery starts from
REPAIR = line(2, "turn/end", {"turn": 0, "reason": {"kind": "interrupted"}})
KEPT = f"{LOG}.cut-{len(VALID)}"

Message = Mapping[str, Any]


def keep() -> list[Message]:
    return [
        {"fact": "create", "file": KEPT, "size": 0},
        {"fact": "write", "file": KEPT, "offset": 0, "bytes": len(TAIL)},
        {"fact": "fsync", "file": KEPT, "size": len(TAIL)},
        {"fact": "dirsync", "dir": DIR},
        {"boundary": "tail/kept", "n": 1, "file": LOG, "offset": len(VALID), "keptIn": KEPT},
    ]


def cut() -> list[Message]:
    return [
        {"fact": "cut", "file": LOG, "size": len(VALID), "keptIn": KEPT},
        {"fact": "fsync", "file": LOG, "size": len(VALID)},
        {"boundary": "tail/cut", "n": 1, "file": LOG, "size": len(VALID)},
    ]


def commit(*, flushed: bool = True) -> list[Message]:
    logged = {"boundary": "repair/logged", "n": 1, "first": 2, "count": 1}
    durable = {"boundary": "repair/durable", "n": 1, "first": 2, "count": 1}
    flush = [
        {"fact": "write", "file": LOG, "offset": len(VALID), "bytes": len(REPAIR)},
        {"boundary": "flush/written", "n": 1, "file": LOG, "size": len(VALID + REPAIR)},
        {"fact": "fsync", "file": LOG, "size": len(VALID + REPAIR)},
        {"fact": "flush", "ok": True, "first": 2, "last": 2},
    ]
    # The bug: reported durable, written by the shutdown flush after it.
    return [logged, *flush, durable] if flushed else [logged, durable, *flush]


def run(trace: Sequence[Message], *, status: int = 0, **fields: Any) -> RecoveryRun:
    start = ((LOG, VALID + TAIL),)
    final = ((LOG, VALID + REPAIR), (KEPT, TAIL))
    return RecoveryRun("repair", tuple(trace), start, final, LOG, status, **fields)


def codes(recovery: RecoveryRun) -> list[str]:
    return sorted(v.code for v in check_recovery([recovery]))


def test_a_repair_that_keeps_the_tail_then_cuts_it_then_commits_survives_every_power_loss() -> None:
    correct = run([*keep(), *cut(), *commit()])
    assert codes(correct) == []
    states = {s.label: s.files for s in recovery_states(correct)}
    assert states["repair child, power loss at tail/kept#1"] == {LOG: VALID + TAIL, KEPT: TAIL}
    assert states["repair child, power loss after its cut of session.jsonl (message 6)"] == {
        LOG: VALID, KEPT: TAIL
    }  # fmt: skip
    # Written, not yet fsynced: the repair is not durable, and not yet claimed.
    assert states["repair child, power loss at flush/written#1"][LOG] == VALID
    assert states["repair child, power loss after it exited"][LOG] == VALID + REPAIR


def test_a_tail_cut_before_it_is_kept_is_lost_by_a_power_loss_in_between() -> None:
    # Kept after the cut (durably): lost between the two.
    assert codes(run([*cut(), *keep(), *commit()])) == ["CUT_TAIL_LOST"]


def test_a_kept_copy_never_fsynced_is_lost_after_the_cut() -> None:
    unsynced = [m for m in keep() if m.get("fact") not in ("fsync", "dirsync")]
    assert codes(run([*unsynced, *cut(), *commit()])) == ["CUT_TAIL_LOST"]
    # Its bytes fsynced but not its name (no fsync of the directory): lost too.
    unnamed = [m for m in keep() if m.get("fact") != "dirsync"]
    (violation,) = check_recovery([run([*unnamed, *cut(), *commit()])])
    assert violation.code == "CUT_TAIL_LOST"
    assert violation.evidence["state"] == (
        "repair child, power loss after its cut of session.jsonl (message 5)"
    )
    assert violation.evidence["states"] > 1  # said once, at the first state that shows it


def test_a_repair_reported_durable_before_its_flush_is_lost_at_that_flush() -> None:
    (violation,) = check_recovery([run([*keep(), *cut(), *commit(flushed=False)])])
    assert violation.code == "REPAIR_LOST"
    assert violation.evidence["state"] == "repair child, power loss at flush/written#1"
    assert violation.evidence["missing"] == [2]


def test_a_failed_recovery_child_is_not_judged_here() -> None:
    assert check_recovery([run([*cut(), *keep()], status=1)]) == []  # RESUME_FAILED says it


def test_under_the_system_calls_the_traced_bytes_and_calls_are_the_truth() -> None:
    # The target reports the correct run; strace shows the cut file written
    # with other bytes than the tail, and no fsync of its directory.
    own = [*keep(), *cut(), *commit()]
    seen = [
        {"fact": "create", "file": KEPT, "size": 0, "after": 0},
        {"fact": "write", "file": KEPT, "offset": 0, "bytes": len(TAIL), "w": 0, "after": 2},
        {"fact": "fsync", "file": KEPT, "size": len(TAIL), "after": 3},
        {"fact": "truncate", "file": LOG, "size": len(VALID), "after": 5},
        {"fact": "fsync", "file": LOG, "size": len(VALID), "after": 6},
        {"fact": "write", "file": LOG, "offset": len(VALID), "bytes": len(REPAIR), "w": 1,
         "after": 9},
        {"fact": "fsync", "file": LOG, "size": len(VALID + REPAIR), "after": 11},
    ]  # fmt: skip
    recovery = run(own, ground_truth="syscalls", syscalls=tuple(seen),
                   written=(b"x" * len(TAIL), REPAIR))  # fmt: skip
    assert codes(recovery) == ["CUT_TAIL_LOST", "DIRSYNC_NOT_MADE"]
    # Under its own facts the same run passes: the lie is seen only in the calls.
    assert codes(run(own)) == []


def test_under_its_own_facts_a_cut_fact_vouches_for_its_cut_file() -> None:
    # The reference reports the cut, not the cut file's own write and fsync
    # (docs/probe-protocol.md 3.2): the cut fact's claim stands for them.
    reported = [{"fact": "dirsync", "dir": DIR}, keep()[-1], *cut(), *commit()]
    assert codes(run(reported)) == []
    # A bare truncate claims nothing: the bytes are gone once it is done.
    bare = [{"fact": "truncate", "file": LOG, "size": len(VALID)}, *commit()]
    assert codes(run(bare)) == ["CUT_TAIL_LOST"]


def test_which_recoveries_run_under_strace(tmp_path: Path) -> None:
    made = Run()
    made.turn()
    traced = replace(made.reference(), ground_truth="syscalls")
    written = [o for o in traced.occurrences if o.startswith("flush/written#")]
    middle = written[len(written) // 2]

    def traces(reference: Any, fault: str, at: str, options: LabOptions) -> frozenset[str]:
        return traces_recovery(Case("/x/t.toml", at, fault), reference, options,
                               torn=fault == "torn-write")  # fmt: skip

    both = {"repair", "resume"}
    forked = LabOptions(reference_target(), tmp_path)
    execd = LabOptions(command_target(sys.executable), tmp_path)
    # A target exec'd anyway: both children of every case's recovery.
    assert all(traces(traced, f, o, execd) == both
               for f in ("power-loss", "torn-write") for o in written)  # fmt: skip
    assert traces(traced, "power-loss", written[0], replace(forked, spawn="exec")) == both
    # The fork server's children: one torn-write case per scenario, at the
    # middle flush, and of it the repair child only (the recovery's own I/O).
    assert [o for o in written if traces(traced, "torn-write", o, forked)] == [middle]
    assert traces(traced, "torn-write", middle, forked) == {"repair"}
    assert not any(traces(traced, "power-loss", o, forked) for o in written)
    # Never without the system's ground truth, nor when the model cannot judge the calls.
    assert not traces(made.reference(), "torn-write", middle, execd)
    assert not traces(replace(traced, trace_unsupported=("mmap",)), "torn-write", middle, execd)
