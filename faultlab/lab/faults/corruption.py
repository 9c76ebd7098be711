# The corrupt-committed fault: damage a line of the committed region of a
# session log (as a lost sector reads back: the same number of NUL bytes) and
# check that the target refuses the log instead of loading it without the
# line.  Owns where the fault applies (every `turn/durable` occurrence: a
# completed turn is committed), which line is damaged, and the checks
# (CORRUPTION_IGNORED).
#
# A case: SIGKILL the target parked at `turn/durable#k`; in the log it left,
# zero the first event line of the last turn that has a `turn/end` on disk
# (its `turn/start`), so a valid `turn/end` follows the damage and every
# reader of format 1 must treat it as committed corruption; run the repair
# child (`--resume --repair-only`), then the resume child (`--resume`).  Both
# must exit with a status > 0 and leave the damaged file byte for byte as it
# was: the damage is reported, never silently dropped (docs/log-format.md).
from __future__ import annotations

import shutil
import time
from dataclasses import dataclass

from faultlab.lab.faults.sigkill import crash_phase
from faultlab.lab.oracle.case import Case, CaseResult, Verdict
from faultlab.lab.oracle.codes import Violation
from faultlab.lab.oracle.verdicts import hung
from faultlab.lab.process.reference import (
    LabOptions,
    Reference,
    make_child,
    read_bytes,
    run_to_exit,
    slug,
)
from faultlab.lab.process.spawn import ChildExit, ChildHung
from faultlab.lab.process.target import session_files
from faultlab.lab.read.jsonl import parse_log
from faultlab.lab.read.view import CORRUPT_COMMITTED_LOG

__all__ = [
    "CORRUPT_FAULT",
    "Damage",
    "damage_committed_line",
    "plan_corrupt_cases",
    "run_corrupt_case",
]

CORRUPT_FAULT = "corrupt-committed"


@dataclass(frozen=True, slots=True)
class Damage:
    """A log with one committed line zeroed: the new bytes and where the damage is."""

    data: bytes
    line: int  # 1-based, the header is line 1
    offset: int
    seq: int  # the seq the damaged line held


def plan_corrupt_cases(reference: Reference) -> list[Case]:
    """One case per completed turn: every `turn/durable` occurrence."""
    return [
        Case(reference.scenario_path, f"turn/durable#{m['n']}", CORRUPT_FAULT)
        for m in reference.boundaries
        if m["boundary"] == "turn/durable"
    ]


def damage_committed_line(data: bytes) -> Damage | None:
    """Zero the `turn/start` line of the last turn whose `turn/end` is in `data`
    (None when no turn is closed: nothing is committed)."""
    view = parse_log(data, "log")
    events = view.events
    last_end = next(
        (i for i in range(len(events) - 1, -1, -1) if events[i].type == "turn/end"), None
    )
    if last_end is None:
        return None
    start = next((e for e in reversed(events[:last_end]) if e.type == "turn/start"), events[0])
    end = data.index(b"\n", start.offset)
    damaged = data[: start.offset] + b"\0" * (end - start.offset) + data[end:]
    return Damage(damaged, start.line, start.offset, start.seq)


def _refused(step: str, status: ChildExit, damage: Damage) -> list[Violation]:
    where = f"line {damage.line} (byte {damage.offset}, seq {damage.seq})"
    if status.returncode > 0:
        return []
    what = (
        "exited 0"
        if status.returncode == 0
        else f"died of signal {-status.returncode} instead of refusing it"
    )
    return [
        Violation(
            "CORRUPTION_IGNORED",
            f"the {step} child loaded a log whose committed {where} is corrupt and {what}",
            {
                "step": step,
                "status": status.returncode,
                "line": damage.line,
                "offset": damage.offset,
            },
        )
    ]


def run_corrupt_case(case: Case, reference: Reference, options: LabOptions) -> CaseResult:
    """Kill at the case's `turn/durable#k`, damage a committed line, recover."""
    started = time.monotonic()
    where = options.workdir / "cases" / slug(case.id)
    shutil.rmtree(where, ignore_errors=True)
    session = where / "session"
    log_path, _ledger = session_files(session)
    artifacts = {"dir": str(where), "trace": str(where / "trace.jsonl")}

    def result(verdict: Verdict, violations: list[Violation], detail: str = "") -> CaseResult:
        return CaseResult(
            case, verdict, tuple(violations), time.monotonic() - started, detail, artifacts
        )

    crash = crash_phase(case, reference, options, session=session, where=where)
    if crash.failure is not None:
        return result(*crash.failure)
    damage = damage_committed_line(read_bytes(log_path))
    if damage is None:
        message = (
            f"at {case.occurrence} the log has no turn/end on disk: no committed line to damage"
        )
        return result("fail", [Violation("FAULT_NOT_INJECTED", message)])
    problems = parse_log(damage.data, str(log_path)).problems
    if not any(p.code == CORRUPT_COMMITTED_LOG and p.line == damage.line for p in problems):
        raise AssertionError(
            f"the lab's reader does not see line {damage.line} as committed damage"
        )
    log_path.write_bytes(damage.data)
    (where / "crashed.jsonl").write_bytes(damage.data)
    artifacts["crashed"] = str(where / "crashed.jsonl")
    try:
        repair = run_to_exit(make_child(options, case.scenario, session, "repair", "repair"),
                              options.timeout)  # fmt: skip
        repaired = read_bytes(log_path)
        resume = run_to_exit(make_child(options, case.scenario, session, "resume", "resume"),
                              options.timeout)  # fmt: skip
    except ChildHung as exc:
        return result(*hung(f"recovery of {case.id}: {exc}"))
    final = read_bytes(log_path)
    for name, data in (("repaired", repaired), ("final", final)):
        (where / f"{name}.jsonl").write_bytes(data)
        artifacts[name] = str(where / f"{name}.jsonl")
    violations = _refused("repair", repair, damage) + _refused("resume", resume, damage)
    for step, data in (("repair", repaired), ("resume", final)):
        if data != damage.data:
            violations.append(Violation(
                "CORRUPTION_IGNORED",
                f"the {step} child changed the damaged log ({len(damage.data)} -> {len(data)} "
                f"bytes) instead of leaving it for a person to look at",
                {"step": step, "size": len(data), "damagedSize": len(damage.data)},
            ))  # fmt: skip
            break
    detail = f"line {damage.line} (seq {damage.seq}) zeroed"
    return result("fail" if violations else "pass", violations, detail)
