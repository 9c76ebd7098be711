# Issue 19's cost figure for crashes during recovery: what one double-sigkill
# case costs next to one single SIGKILL case of the same scenario, and what
# planning them costs (one fault-free recovery per first kill point), the
# sides measured side by side by round.  Measurement only, no verdict.
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from faultlab import lab
from faultlab.bench.common import Say, median, quiet, side_by_side
from faultlab.lab.campaigns.explore import explore, load_scenarios
from faultlab.lab.faults.double import DOUBLE_FAULT
from faultlab.lab.process.reference import LabOptions

__all__ = ["DoubleCrash", "double_crash"]

_REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True, slots=True)
class DoubleCrash:
    """Seconds per case of single SIGKILL cases vs double-sigkill cases (with
    and without their planning), one exploration of one scenario each, 1 job."""

    scenario: str
    rounds: int
    single_cases: int
    double_cases: int  # at most `bound`
    bound: int
    single_seconds: tuple[float, ...]
    double_seconds: tuple[float, ...]  # planning + cases
    all_passed: bool
    single_ms_per_case: float
    double_ms_per_case: float  # planning included
    double_vs_single: float  # per case, planning included


def _scenario(quick: bool) -> Path:
    tiny = _REPO / "tests" / "scenarios" / "tiny-tool.toml"
    return tiny if quick and tiny.is_file() else lab.bundled_scenarios() / "payment.toml"


def double_crash(quick: bool, *, say: Say = quiet) -> DoubleCrash:
    """Explore one scenario with sigkill, then with double-sigkill (bounded),
    alternating by round; per-case costs and their ratio."""
    path = _scenario(quick)
    scenarios = load_scenarios([path])
    rounds = 1 if quick else 3
    bound = 8 if quick else 24
    counts: dict[str, int] = {}
    passed: list[bool] = []

    def side(fault: str) -> Callable[[], float]:
        def run() -> float:
            with lab.workdir() as work:
                options = LabOptions(lab.make_target(), work, 60.0)
                started = time.perf_counter()
                result = explore(scenarios, options, faults=(fault,), max_double=bound)
                seconds = time.perf_counter() - started
            cases = [r for r in result.results if r.case.fault == fault]
            counts[fault] = len(cases)
            passed.append(result.passed)
            say(f"double crash: {len(cases)} {fault} case(s) in {seconds:.1f}s")
            return seconds

        return run

    single, double = side_by_side(rounds, [side("sigkill"), side(DOUBLE_FAULT)])
    single_ms = median(single) * 1000 / max(1, counts["sigkill"])
    double_ms = median(double) * 1000 / max(1, counts[DOUBLE_FAULT])
    return DoubleCrash(
        scenario=path.name, rounds=rounds, single_cases=counts["sigkill"],
        double_cases=counts[DOUBLE_FAULT], bound=bound, single_seconds=tuple(single),
        double_seconds=tuple(double), all_passed=all(passed), single_ms_per_case=single_ms,
        double_ms_per_case=double_ms, double_vs_single=double_ms / single_ms,
    )  # fmt: skip
