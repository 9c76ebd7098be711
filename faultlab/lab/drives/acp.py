# The ACP drive (`--drive acp`): the lab is an editor-like ACP client of an
# agent (the reference runtime's ACP server, or `--target`), and hurts it at
# the boundaries the agent reports (faultlab/lab/acp/).
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from faultlab.lab.acp.child import kill_all_acp
from faultlab.lab.acp.doublecrash import plan_acp_double_cases, run_acp_double_case
from faultlab.lab.acp.drive import (
    ACP_FAULTS,
    AcpOptions,
    plan_acp_cases,
    run_acp_case,
    run_acp_reference,
)
from faultlab.lab.drives.protocol import (
    PlanContext,
    SingleDrive,
    coverage_result,
    parse_fault_names,
)
from faultlab.lab.errors import LabUsageError
from faultlab.lab.faults.double import DOUBLE_FAULT, parse_pair
from faultlab.lab.oracle.case import Case, CaseResult
from faultlab.lab.process.reference import Reference
from faultlab.probe import parse_occurrence
from faultlab.scenario import Scenario

__all__ = ["AcpDrive"]


@dataclass(frozen=True, slots=True)
class AcpDrive(SingleDrive):
    """The ACP drive over `options` (the agent command, its policy)."""

    options: AcpOptions
    max_double: int
    name: str = "acp"
    coverage_fault: str = "reference"
    faults: tuple[str, ...] = (*ACP_FAULTS, DOUBLE_FAULT)
    all_faults: tuple[str, ...] = (*ACP_FAULTS, DOUBLE_FAULT)  # all means every fault

    @property
    def workdir(self) -> Path:
        return self.options.workdir

    def reference(self, path: str, scenario: Scenario) -> Reference:
        return run_acp_reference(path, scenario, self.options)

    def plan(self, reference: Reference, faults: Sequence[str], context: PlanContext
             ) -> list[Case]:  # fmt: skip
        cases = plan_acp_cases(reference, faults)
        if DOUBLE_FAULT in faults:
            cases += plan_acp_double_cases(
                reference, self.options, max_cases=self.max_double, jobs=context.jobs,
                progress=context.progress,
            )  # fmt: skip
        return cases

    def coverage(self, case: Case, reference: Reference, faults: Sequence[str]) -> CaseResult:
        return coverage_result(case, reference)

    def run(self, case: Case, reference: Reference) -> CaseResult:
        if case.fault == DOUBLE_FAULT:
            return run_acp_double_case(case, reference, self.options)
        return run_acp_case(case, reference, self.options)

    def parse_faults(self, names: Sequence[str]) -> tuple[str, ...]:
        return parse_fault_names(names, supported=self.faults, all_faults=self.all_faults,
                                 drive=self.name)  # fmt: skip

    def parse_occurrence(self, text: str, fault: str) -> str:
        if fault == DOUBLE_FAULT:
            return "+".join(parse_pair(text))
        name, n = parse_occurrence(text)
        return f"{name}#{n}"

    def check_applies(self, case: Case, reference: Reference) -> None:
        scenario = Path(case.scenario).name
        if case.fault == DOUBLE_FAULT:
            first = case.occurrence.partition("+")[0]
            if first not in reference.occurrences:
                raise LabUsageError(f"{scenario}: the fault-free run never reaches {first}")
            return
        applicable = plan_acp_cases(reference, [case.fault])
        if case not in applicable:
            where = ", ".join(c.occurrence for c in applicable[:8])
            raise LabUsageError(
                f"fault {case.fault!r} does not apply at {case.occurrence} in {scenario} "
                f"with --drive acp (it applies at: {where}{', ...' if len(applicable) > 8 else ''})"
            )

    def kill_all(self) -> None:
        kill_all_acp()

    def run_options(self) -> dict[str, Any]:
        command = None if self.options.reference else list(self.options.command)
        return {"policy": self.options.policy, "spawn": self.options.spawn, "target": command}
