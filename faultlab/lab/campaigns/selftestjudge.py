# A selftest's rows and how each is judged: `SelftestRow` (one variant, or the
# reference runtime, under one stage), `SelftestResult` (the score, the false
# alarms, the verdict) and the judges that turn case results into a row's
# status (detected, missed, wrong-code; clean, false-alarm).  Running the
# stages is faultlab/lab/campaigns/selftest.py.
from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from faultlab.lab.campaigns.explore import fault_tally
from faultlab.lab.oracle.case import CaseResult

__all__ = [
    "REFERENCE",
    "SelftestInterrupted",
    "SelftestResult",
    "SelftestRow",
    "Stage",
    "Status",
    "judge_reference",
    "judge_variant",
]

REFERENCE = "reference runtime"
Status = Literal["detected", "missed", "wrong-code", "clean", "false-alarm", "not-available"]
Stage = Literal["explore", "quick", "fuzz"]
_BAD: frozenset[str] = frozenset({"missed", "wrong-code", "false-alarm"})


@dataclass(frozen=True, slots=True)
class SelftestRow:
    """One variant (or the reference runtime) under one stage."""

    variant: str
    stage: Stage
    expected: tuple[str, ...]
    status: Status
    first_case: str | None  # the first case (in case order) with an expected code
    cases: int
    failing: int
    codes: dict[str, int] = field(default_factory=dict)  # code -> failing cases with it
    seconds: float = 0.0
    note: str = ""
    faults: dict[str, int] = field(default_factory=dict)  # fault -> failing cases under it
    # fault -> {"ran": crash cases that ran, "unsupported": those that could not}
    ran: dict[str, dict[str, int]] = field(default_factory=dict)
    # a correct runtime (the reference, or one in another language): judged
    # for false alarms, never counted in the mutation score
    correct: bool = False

    @property
    def bad(self) -> bool:
        return self.status in _BAD

    def to_json(self) -> dict[str, Any]:
        return {
            "variant": self.variant,
            "stage": self.stage,
            "expected": list(self.expected),
            "status": self.status,
            "firstCase": self.first_case,
            "cases": self.cases,
            "failing": self.failing,
            "codes": self.codes,
            "seconds": round(self.seconds, 3),
            "note": self.note,
            "failingByFault": self.faults,
            "perFault": self.ran,
            "correct": self.correct,
        }


@dataclass(frozen=True, slots=True)
class SelftestResult:
    rows: tuple[SelftestRow, ...]
    quick: bool
    seconds: float
    zoo: str
    complete: bool = True  # False: interrupted; `rows` are those finished by then

    @property
    def variant_rows(self) -> list[SelftestRow]:
        return [r for r in self.rows if not r.correct and r.status != "not-available"]

    @property
    def score(self) -> tuple[int, int]:
        """(variants caught with their codes, variants judged)."""
        judged = {r.variant for r in self.variant_rows}
        missed = {r.variant for r in self.variant_rows if r.bad}
        return len(judged - missed), len(judged)

    @property
    def false_alarms(self) -> int:
        return sum(r.failing for r in self.rows if r.correct)

    @property
    def passed(self) -> bool:
        """Every variant caught with its codes, the reference clean, something checked."""
        judged_reference = any(r.variant == REFERENCE and r.status == "clean" for r in self.rows)
        return bool(self.variant_rows) and judged_reference and not any(r.bad for r in self.rows)

    def to_json(self) -> dict[str, Any]:
        caught, judged = self.score
        return {
            "passed": self.passed,
            "complete": self.complete,
            "quick": self.quick,
            "zoo": self.zoo,
            "seconds": round(self.seconds, 3),
            "mutationScore": {"caught": caught, "variants": judged},
            "falseAlarms": self.false_alarms,
            "rows": [r.to_json() for r in self.rows],
        }


class SelftestInterrupted(KeyboardInterrupt):
    """A selftest stopped by SIGINT or SIGTERM: `partial` holds the rows
    finished by then (marked incomplete)."""

    def __init__(self, partial: SelftestResult) -> None:
        super().__init__("interrupted")
        self.partial = partial


def _codes(results: Sequence[CaseResult]) -> dict[str, int]:
    return dict(Counter(code for r in results if not r.passed for code in r.codes))


def _faults(results: Sequence[CaseResult]) -> dict[str, int]:
    return dict(Counter(r.case.fault for r in results if not r.passed))


def _ran(results: Sequence[CaseResult]) -> dict[str, dict[str, int]]:
    return {fault: tally.to_json() for fault, tally in fault_tally(results).items()}


def judge_variant(
    name: str, expected: Sequence[str], results: Sequence[CaseResult], *, stage: Stage,
    seconds: float = 0.0,
) -> SelftestRow:  # fmt: skip
    """Detected when every expected code is reported by some failing case;
    missed when no case fails; wrong-code when cases fail without them."""
    failing = [r for r in results if not r.passed]
    firsts: dict[str, str] = {}
    for result in failing:
        for code in result.codes:
            firsts.setdefault(code, result.case.id)
    found = [code for code in expected if code in firsts]
    first = next((r.case.id for r in failing if set(r.codes) & set(expected)), None)
    if failing and len(found) == len(expected):
        status: Status = "detected"
        note = ""
    elif not failing:
        status = "missed"
        note = f"all {len(results)} case(s) passed" if results else "no case ran"
    else:
        status = "wrong-code"
        lacking = [c for c in expected if c not in firsts]
        note = f"never reported: {', '.join(lacking)}"
    return SelftestRow(name, stage, tuple(expected), status, first, len(results), len(failing),
                       _codes(results), seconds, note, _faults(results),
                       _ran(results))  # fmt: skip


def judge_reference(
    results: Sequence[CaseResult], *, stage: Stage, seconds: float = 0.0, name: str = REFERENCE
) -> SelftestRow:
    """Clean when every case passed (and there were cases); a false alarm
    otherwise.  `name`: the correct runtime judged (default the reference)."""
    failing = [r for r in results if not r.passed]
    if results and not failing:
        status: Status = "clean"
        note = f"{len(results)} case(s), no violation"
    else:
        status = "false-alarm"
        note = "no case ran" if not results else f"{failing[0].case.id}: {failing[0].codes}"
    first = failing[0].case.id if failing else None
    return SelftestRow(name, stage, (), status, first, len(results), len(failing),
                       _codes(results), seconds, note, _faults(results),
                       _ran(results), correct=True)  # fmt: skip
