# The oracle of a crash during recovery (`double-sigkill`): every guarantee
# checked against the union of both crashes' ground truth.  The first crash
# is judged as a SIGKILL case is (its probe trace against the crashed log,
# its repair); the second crash, of the --resume child, against what that
# child reported (requests it sent, bodies it started, flushes it completed)
# and the log it left, which must extend the first repair's log; the second
# repair's classification of every call left unanswered; and the world
# ledger after both recoveries (no effect applied twice across them).
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from faultlab.lab.oracle.checks import (
    Observation,
    check_crash_durability,
    check_crash_integrity,
    check_repair,
    check_resume,
    event_key,
)
from faultlab.lab.oracle.codes import Violation
from faultlab.lab.process.spawn import ChildExit
from faultlab.lab.read.view import LogView

__all__ = ["FirstCrash", "check_double"]


@dataclass(frozen=True, slots=True)
class FirstCrash:
    """The first crash of a double-crash case: the fresh run's probe trace,
    the log it left, and the log after its repair (`--repair-only`, or the
    ACP drive's first session/load).  `repaired` is None when the second kill
    came inside that repair (a session/load cut short): what the first crash
    left unanswered is then judged in the second repair."""

    trace: tuple[Mapping[str, Any], ...]
    crashed: LogView
    repaired: LogView | None
    repair_status: ChildExit


def _extends(earlier: LogView, later: LogView, what: str) -> list[Violation]:
    """G5 across the recoveries: `later` starts with every event of `earlier`."""
    for index, event in enumerate(earlier.events):
        if index >= len(later.events) or event_key(event) != event_key(later.events[index]):
            return [Violation(
                "LOG_NOT_PREFIX",
                f"the {what} does not start with the log it was made from (first difference "
                f"at seq {event.seq})",
                {"log": what, "seq": event.seq},
            )]  # fmt: skip
    return []


def _tagged(violations: Sequence[Violation], crash: str) -> list[Violation]:
    """Say which crash a violation is about (the evidence keeps its own fields)."""
    return [
        replace(v, message=f"{crash}: {v.message}", evidence={**v.evidence, "crash": crash})
        for v in violations
    ]


def _resume_durability(second: Observation) -> list[Violation]:
    """G1, G2, G4 for the --resume child: what it reported durable or acted on
    is in the log it left.  Its flushes' seqs count from the session's start,
    so the lost-event test works on the whole log; which of its lost events
    were turn ends is known only from its trace (`turn/durable`), so the code
    of a lost flush is SETTLED_STEP_LOST unless a turn was reported durable."""
    return check_crash_durability(second.trace, second.crashed, second.crashed)


def check_double(first: FirstCrash, second: Observation | None) -> list[Violation]:
    """Every guarantee of a double-crash case.  `second` is None when the first
    repair failed (there was no resume to crash)."""
    found: list[Violation] = []
    reference = second.reference_log if second is not None else None
    if reference is not None:
        found += _tagged(check_crash_integrity(first.crashed, reference), "first crash")
        found += _tagged(check_crash_durability(first.trace, first.crashed, reference),
                         "first crash")  # fmt: skip
    if second is None:
        if first.repair_status.returncode != 0:
            return [Violation(
                "RESUME_FAILED",
                f"the repair after the first crash exited with status "
                f"{first.repair_status.returncode}",
                {"status": first.repair_status.returncode, "crash": "first crash"},
            )]  # fmt: skip
        return found
    if first.repaired is None:
        found += _extends(first.crashed, second.crashed, "log the killed repair left")
    else:
        as_first = replace(
            second, trace=first.trace, crashed=first.crashed, repaired=first.repaired,
            repair_status=first.repair_status,
        )  # fmt: skip
        found += _tagged(check_repair(as_first), "first crash")
        found += _extends(first.crashed, first.repaired, "log after the first repair")
        found += _extends(first.repaired, second.crashed, "log the killed resume left")
    found += _tagged(_problems(second.crashed, "log the killed resume left"), "second crash")
    found += _tagged(_resume_durability(second), "second crash")
    found += _tagged(check_repair(second), "second crash")
    found += _extends(second.crashed, second.repaired, "log after the second repair")
    found += _extends(second.repaired, second.final, "log after the last resume")
    # G6 (effects across both recoveries: the final ledger holds every effect
    # of the fresh run, the killed resume and the last resume), G7 on the
    # final history, G8 (the last resume appended nothing before a new turn).
    found += check_resume(second)
    return found


def _problems(view: LogView, what: str) -> list[Violation]:
    code = {"BAD_HEADER": "CORRUPT_COMMITTED_LOG"}
    return [
        Violation(
            code.get(p.code, p.code),
            f"{what}: {p.message}",  # the message names the line (or row) itself
            {"log": what, "line": p.line},
        )
        for p in view.problems
    ]
