# The ACP drive (`--drive acp`): the lab is an editor-like ACP client of an
# agent (the reference runtime's ACP server, or `--target`), and hurts it at
# the boundaries the agent reports (faultlab/lab/acp/), with the faults of its
# table (faultlab/lab/acp/faults.py).
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from faultlab.lab.acp.drive import AcpOptions, run_acp_reference
from faultlab.lab.acp.faults import ACP_FAULTS, acp_fault
from faultlab.lab.drives.protocol import PlanContext, SingleDrive, coverage_result
from faultlab.lab.errors import LabUsageError
from faultlab.lab.faults.double import parse_pair
from faultlab.lab.faults.fault import Planning, all_names, parse_fault_names, plan_faults
from faultlab.lab.oracle.case import Case, CaseResult
from faultlab.lab.process.live import kill_all
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
    faults: tuple[str, ...] = tuple(ACP_FAULTS)
    all_faults: tuple[str, ...] = all_names(ACP_FAULTS)

    @property
    def workdir(self) -> Path:
        return self.options.workdir

    def reference(self, path: str, scenario: Scenario) -> Reference:
        return run_acp_reference(path, scenario, self.options)

    def plan(self, reference: Reference, faults: Sequence[str], context: PlanContext
             ) -> list[Case]:  # fmt: skip
        planning = Planning(self.options, self.max_double, context.jobs, context.progress)
        return plan_faults(ACP_FAULTS, reference, faults, planning)

    def coverage(self, case: Case, reference: Reference, faults: Sequence[str]) -> CaseResult:
        return coverage_result(case, reference)

    def run(self, case: Case, reference: Reference) -> CaseResult:
        return acp_fault(case.fault).run(case, reference, self.options)

    def parse_faults(self, names: Sequence[str]) -> tuple[str, ...]:
        return parse_fault_names(names, ACP_FAULTS, drive=self.name)

    def parse_occurrence(self, text: str, fault: str) -> str:
        if acp_fault(fault).by_running:  # a crash during recovery: K1+K2
            return "+".join(parse_pair(text))
        name, n = parse_occurrence(text)
        return f"{name}#{n}"

    def check_applies(self, case: Case, reference: Reference) -> None:
        scenario = Path(case.scenario).name
        fault = acp_fault(case.fault)
        if fault.by_running:
            first = case.occurrence.partition("+")[0]
            if first not in reference.occurrences:
                raise LabUsageError(f"{scenario}: the fault-free run never reaches {first}")
            return
        applicable = fault.plan(reference, Planning(self.options))
        if case not in applicable:
            where = ", ".join(c.occurrence for c in applicable[:8])
            raise LabUsageError(
                f"fault {case.fault!r} does not apply at {case.occurrence} in {scenario} "
                f"with --drive acp (it applies at: {where}{', ...' if len(applicable) > 8 else ''})"
            )

    def kill_all(self) -> None:
        kill_all()

    def run_options(self) -> dict[str, Any]:
        command = None if self.options.reference else list(self.options.command)
        return {"policy": self.options.policy, "spawn": self.options.spawn, "target": command}
