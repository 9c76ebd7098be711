# The classic drive: a protocol target (the reference runtime, or any command
# that speaks the probe protocol) runs a scenario by itself and is hurt at the
# boundaries it reports, with the faults of faultlab/lab/faults/table.py.  A
# fault the backend cannot run gives one `unsupported` case per scenario.
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from faultlab.lab.drives.protocol import (
    COVERAGE,
    PlanContext,
    SingleDrive,
    calls_tools,
    coverage_result,
    reference_failed,
)
from faultlab.lab.errors import LabUsageError
from faultlab.lab.faults.double import parse_pair
from faultlab.lab.faults.fault import Planning, all_names, parse_fault_names
from faultlab.lab.faults.table import CLASSIC_FAULTS, classic_fault
from faultlab.lab.oracle.case import Case, CaseResult
from faultlab.lab.oracle.codes import Violation
from faultlab.lab.process.reference import LabOptions, Reference, run_reference
from faultlab.lab.process.spawn import kill_all
from faultlab.lab.read.stores import store_for
from faultlab.probe import parse_occurrence
from faultlab.scenario import Scenario

__all__ = ["ClassicDrive", "classic_coverage", "plan_cases", "plan_gaps", "run_one"]

def plan_cases(
    reference: Reference, faults: Sequence[str] = ("sigkill",),
    planning: Planning[LabOptions] | None = None,
) -> list[Case]:  # fmt: skip
    """The coverage case, then for each fault (in table order) its cases in
    trace order; faults planned by running the target (double-sigkill) last.
    A fault the backend cannot run gets one case that says so."""
    planning = planning or Planning()
    cases = [Case(reference.scenario_path, COVERAGE, "reference")]
    store = store_for(reference.backend)
    wanted = [f for f in CLASSIC_FAULTS.values() if f.name in faults]
    for entry in sorted(wanted, key=lambda f: f.by_running):
        reason = store.unsupported_reason(entry.name, reference.ground_truth)
        if reason is not None and not entry.by_running:
            cases.append(Case(reference.scenario_path, "flush/written#1", entry.name))
        else:
            cases += entry.plan(reference, planning)
    return cases


def plan_gaps(reference: Reference, faults: Sequence[str]) -> list[Violation]:
    """Never green on nothing: a fault of `faults` that applies to the
    scenario but got no case (FAULT_NOT_PLANNED; cancel-in-checkpoint applies
    only where the script calls tools) and an `[[expect]]` of one of `faults`
    that no case checks (EXPECTATION_NOT_CHECKED).  Faults planned by running
    the recovery report a kill point they could not plan as a case of their
    own (faults/double.py)."""
    if not reference.occurrences:
        return []  # NO_BOUNDARY_REPORTED, said by the coverage case itself
    name = reference.scenario.name
    single = [f for f in CLASSIC_FAULTS.values() if f.name in faults and not f.by_running]
    planned = plan_cases(reference, [f.name for f in single])
    found = []
    with_cases = {c.fault for c in planned}
    for entry in single:
        applies = not entry.needs_tools or calls_tools(reference.scenario)
        if applies and entry.name not in with_cases:
            found.append(Violation(
                "FAULT_NOT_PLANNED",
                f"{entry.name} applies to {name} but the reference run gave it no case "
                "(none of the boundaries it is injected at was reported)",
                {"fault": entry.name},
            ))  # fmt: skip
    keys = {(c.occurrence, c.fault) for c in planned}
    for expect in reference.scenario.expectations:
        if expect.fault in faults and (expect.at, expect.fault) not in keys:
            found.append(Violation(
                "EXPECTATION_NOT_CHECKED",
                f"{name} expects something at {expect.at} under {expect.fault}, but no "
                f"{expect.fault} case runs there (the reference run never reached it)",
                {"at": expect.at, "fault": expect.fault},
            ))  # fmt: skip
    return found


def classic_coverage(
    case: Case, reference: Reference, faults: Sequence[str] = ()
) -> CaseResult:
    """A scenario's coverage case: its fault-free run reported boundaries and
    reached the declared ones, and (given the run's `faults`) every fault got
    a case where it applies and every `[[expect]]` of those a case that checks it."""
    if reference.returncode != 0:
        return coverage_result(case, reference)
    return coverage_result(case, reference, plan_gaps(reference, faults))


def run_one(case: Case, reference: Reference, options: LabOptions) -> CaseResult:
    """One planned case of the classic drive (its coverage case included)."""
    if case.occurrence == COVERAGE:
        return coverage_result(case, reference)
    if reference.returncode != 0:
        return reference_failed(case, reference)
    fault = classic_fault(case.fault)
    reason = store_for(reference.backend).unsupported_reason(fault.name, reference.ground_truth)
    if reason is not None and not fault.by_running:
        return CaseResult(case, "unsupported", (), 0.0, f"backend {reference.backend}: {reason}")
    return fault.run(case, reference, options)


@dataclass(frozen=True, slots=True)
class ClassicDrive(SingleDrive):
    """The classic drive over `options` (the target, its policy and backend)."""

    options: LabOptions
    max_double: int
    check_determinism: bool = False  # run: each case twice, NONDETERMINISTIC if they differ
    name: str = "classic"
    coverage_fault: str = "reference"
    faults: tuple[str, ...] = tuple(CLASSIC_FAULTS)
    all_faults: tuple[str, ...] = all_names(CLASSIC_FAULTS)

    @property
    def workdir(self) -> Path:
        return self.options.workdir

    def for_jobs(self, jobs: int) -> ClassicDrive:
        return replace(self, options=self.options.for_jobs(jobs))

    def for_faults(self, faults: Sequence[str]) -> ClassicDrive:
        trace = any(CLASSIC_FAULTS[f].needs_trace for f in faults if f in CLASSIC_FAULTS)
        return replace(self, options=replace(self.options, trace=trace))

    def reference(self, path: str, scenario: Scenario) -> Reference:
        return run_reference(path, scenario, self.options)

    def plan(self, reference: Reference, faults: Sequence[str], context: PlanContext
             ) -> list[Case]:  # fmt: skip
        planning = Planning(self.options, self.max_double, context.jobs,
                            context.progress)  # fmt: skip
        return plan_cases(reference, faults, planning)[1:]

    def coverage(self, case: Case, reference: Reference, faults: Sequence[str]) -> CaseResult:
        return classic_coverage(case, reference, faults)

    def run(self, case: Case, reference: Reference) -> CaseResult:
        return run_one(case, reference, self.options)

    def parse_faults(self, names: Sequence[str]) -> tuple[str, ...]:
        return parse_fault_names(names, CLASSIC_FAULTS, drive=self.name)

    def parse_occurrence(self, text: str, fault: str) -> str:
        fault_value = classic_fault(fault)
        if fault_value.by_running:
            return "+".join(parse_pair(text))
        name, n = parse_occurrence(text)
        fault_value.check_at(name)
        return f"{name}#{n}"

    def check_applies(self, case: Case, reference: Reference) -> None:
        scenario = Path(case.scenario).name
        fault = classic_fault(case.fault)
        reason = store_for(reference.backend).unsupported_reason(fault.name,
                                                                 reference.ground_truth)
        if reason is not None:
            raise LabUsageError(f"fault {fault.name!r} is not supported on backend "
                                f"{reference.backend}: {reason}")  # fmt: skip
        if fault.by_running:
            first = case.occurrence.partition("+")[0]
            if first not in reference.occurrences:
                raise LabUsageError(f"{scenario}: the fault-free run never reaches {first}")
            return
        applicable = fault.plan(reference, Planning(self.options))
        if not applicable:
            raise LabUsageError(
                f"fault {fault.name!r} applies nowhere in {scenario}: its fault-free "
                "run reaches none of the boundaries the fault is injected at"
            )
        if case not in applicable:
            where = ", ".join(c.occurrence for c in applicable[:8])
            more = ", ..." if len(applicable) > 8 else ""
            raise LabUsageError(f"fault {fault.name!r} does not apply at {case.occurrence} in "
                                f"{scenario} (it applies at: {where}{more})")  # fmt: skip

    def kill_all(self) -> None:
        kill_all()

    def run_options(self) -> dict[str, Any]:
        target = self.options.target
        return {"policy": target.policy, "backend": target.backend, "spawn": self.options.spawn,
                "target": None if target.reference else list(target.command)}  # fmt: skip
