# The `Drive` protocol (as pytest-xdist has one scheduler protocol): what the
# engine needs of each kind of target, and the verdicts every drive shares
# (the coverage case, a failed reference run).  A drive is built once per run
# with its options (registry.py) and is then only asked questions.
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, Self

from faultlab.lab.oracle.case import Case, CaseResult
from faultlab.lab.oracle.checks import check_coverage
from faultlab.lab.oracle.codes import Violation
from faultlab.lab.oracle.verdicts import hung
from faultlab.lab.process.reference import Reference
from faultlab.scenario import Scenario

__all__ = [
    "COVERAGE",
    "Drive",
    "PlanContext",
    "SingleDrive",
    "calls_tools",
    "coverage_result",
    "output_tail",
    "reference_failed",
]

COVERAGE = "coverage"  # the occurrence name of a scenario's coverage case


@dataclass(frozen=True, slots=True)
class PlanContext:
    """What planning may use beyond the reference run: drives whose faults
    are planned by running the target (double-sigkill) run `jobs` at a time
    and tell `progress` (scenario, probed, total)."""

    jobs: int = 1
    progress: Callable[[str, int, int], None] | None = None


class Drive(Protocol):
    """One kind of target, driven: classic, acp, agent or app."""

    @property
    def name(self) -> str:
        """The drive's name in the registry, reports and `run.json`."""

    @property
    def faults(self) -> tuple[str, ...]:
        """Every fault it runs, in report order."""

    @property
    def all_faults(self) -> tuple[str, ...]:
        """What `--faults all` means for it."""

    @property
    def workdir(self) -> Path:
        """Where its children's files live during the run."""

    @property
    def coverage_fault(self) -> str:
        """The fault of its coverage cases (`reference`, or `reference/MODE`)."""

    def for_jobs(self, jobs: int) -> Drive:
        """This drive for a run of `jobs` cases at a time (the classic drive's
        fork server warms its children only with no more jobs than CPUs)."""

    def for_faults(self, faults: Sequence[str]) -> Drive:
        """This drive for a campaign of `faults` (parsed names): what it
        prepares only for some faults (the classic drive's traced reference
        run) it prepares only when one of them needs it."""

    def variants(self) -> Sequence[Drive]:
        """The drives a run of this one is made of (an app compared in several
        modes: one per mode; otherwise itself)."""

    def variant_for(self, fault: str) -> Drive:
        """The variant that runs a case of `fault` (an app case's mode)."""

    def case_fault(self, fault: str) -> str:
        """The fault as its cases are named (an app's FAULT/STYLE/MODE)."""

    def reference(self, path: str, scenario: Scenario) -> Reference:
        """The fault-free run of one scenario."""

    def plan(self, reference: Reference, faults: Sequence[str], context: PlanContext
             ) -> list[Case]:  # fmt: skip
        """The crash cases of `faults` (parsed) for a reference that exited 0."""

    def coverage(self, case: Case, reference: Reference, faults: Sequence[str]) -> CaseResult:
        """The scenario's coverage case: the run exercised what it must."""

    def run(self, case: Case, reference: Reference) -> CaseResult:
        """One planned crash case."""

    def parse_faults(self, names: Sequence[str]) -> tuple[str, ...]:
        """`all` or names -> its faults in order (a usage error names the bad one)."""

    def parse_occurrence(self, text: str, fault: str) -> str:
        """A kill point as the user writes it -> the case's occurrence."""

    def check_applies(self, case: Case, reference: Reference) -> None:
        """A usage error unless its plan could make `case` (run, replay)."""

    def kill_all(self) -> None:
        """Kill every process it started (interrupt, broken run)."""

    def run_options(self) -> dict[str, Any]:
        """Its options as `run.json` keeps them, to build it again for a replay."""


class SingleDrive:
    """What a drive of one variant answers the same way: it is the same drive
    for any number of jobs and any case, and names its cases' faults as given."""

    __slots__ = ()

    def for_jobs(self, jobs: int) -> Self:
        return self

    def for_faults(self, faults: Sequence[str]) -> Self:
        return self

    def variants(self) -> Sequence[Self]:
        return (self,)

    def variant_for(self, fault: str) -> Self:
        return self

    def case_fault(self, fault: str) -> str:
        return fault


def reference_failed(case: Case, reference: Reference) -> CaseResult:
    """The verdict of every case of a scenario whose fault-free run failed."""
    if reference.refused is not None:
        code, message = reference.refused
        return CaseResult(case, "error", (Violation(code, message),))
    if reference.bad_reports:
        message = (f"the target's probe report broke the protocol: {reference.bad_reports[0]}"
                   " (docs/probe-protocol.md)")  # fmt: skip
        evidence = {"problems": list(reference.bad_reports)}
        return CaseResult(case, "error", (Violation("BAD_PROBE_REPORT", message, evidence),))
    if reference.hung:
        verdict, violations = hung(f"the fault-free run {reference.stderr}")
        return CaseResult(case, verdict, tuple(violations))
    # The output's tail goes with it (a traceback: the console and the
    # report show it), bounded as the reference keeps it.
    violation = Violation(
        "REFERENCE_FAILED",
        f"the fault-free run exited with status {reference.returncode}: "
        f"{output_tail(reference.stderr)}",
        {"status": reference.returncode, "output": reference.stderr.strip()[-3000:]},
    )
    return CaseResult(case, "error", (violation,))


def output_tail(text: str, *, lines: int = 12, limit: int = 1500) -> str:
    """The last `lines` non-empty lines of a run's output as one line (joined
    by ' | ', at most `limit` characters, cut at the front): an agent's
    error is often a JSON object whose last line alone is `}`."""
    kept = [line.strip() for line in text.strip().splitlines() if line.strip()][-lines:]
    joined = " | ".join(kept) or "no output"
    return joined if len(joined) <= limit else "..." + joined[-limit:]


def calls_tools(scenario: Scenario) -> bool:
    return any(
        step.tool_calls or any(branch.tool_calls for branch in step.branches)
        for turn in scenario.turns
        for step in turn.steps
    )


def coverage_result(
    case: Case, reference: Reference, gaps: Sequence[Violation] = (), *,
    declared: bool = True, tool_boundary: str | None = None, seen: str = "",
    needs: Sequence[tuple[str, str]] = (),
) -> CaseResult:  # fmt: skip
    """A coverage case: the fault-free run exited 0, reported some boundary
    (`gaps` says what else a planner left unchecked), reached the boundaries
    the scenario declares (`declared`: they name probe boundaries, which only
    probe targets report) and, when `tool_boundary` is given, ran every tool
    the script's steps call (that boundary's records name the tool) and
    reached each boundary of `needs` (name, what it is): a target that never
    ran the tools, or never wrote its store, would pass every case vacuously
    (NOTHING_TESTED; `seen` says where to look)."""
    if reference.returncode != 0:
        return reference_failed(case, reference)
    violations = list(gaps)
    scenario = reference.scenario
    if not reference.occurrences and not violations:
        violations.append(Violation(
            "NO_BOUNDARY_REPORTED",
            f"the fault-free run of {scenario.name} exited cleanly but reported no boundary: "
            "there is no kill point to test (is the probe wired in?)",
            {"trace": len(reference.trace)},
        ))  # fmt: skip
    if reference.occurrences:
        bare = scenario if declared else dataclasses.replace(scenario, boundaries=())
        violations += check_coverage(bare, reference.occurrences)
    if not violations and tool_boundary is not None:
        violations += _nothing_tested(reference, tool_boundary.partition("#")[0], seen, needs)
    return CaseResult(case, "fail" if violations else "pass", tuple(violations))


def _nothing_tested(reference: Reference, tool_boundary: str, seen: str,
                    needs: Sequence[tuple[str, str]]) -> list[Violation]:  # fmt: skip
    """NOTHING_TESTED: a tool the script's steps call that never ran in the
    fault-free run, else a needed boundary it never reached."""
    scenario = reference.scenario
    called = {c.tool for turn in scenario.turns for step in turn.steps for c in step.tool_calls}
    ran = {str(r.get("tool")) for r in reference.trace if r.get("boundary") == tool_boundary}
    missing = sorted(called - ran)
    if missing:
        done = sorted(ran & called)
        what = f"{', '.join(done)} but not {', '.join(missing)}" if done else "no tool"
        return [Violation(
            "NOTHING_TESTED",
            f"{scenario.name} calls {', '.join(sorted(called))}, but the fault-free run ran "
            f"{what}: {seen}",
            {"boundary": tool_boundary, "tools": missing},
        )]  # fmt: skip
    names = {o.partition("#")[0] for o in reference.occurrences}
    return [Violation(
        "NOTHING_TESTED",
        f"{scenario.name} needs {what} ({boundary}), but the fault-free run never reached one",
        {"boundary": boundary},
    ) for boundary, what in needs if boundary not in names]  # fmt: skip
