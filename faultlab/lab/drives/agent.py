# The black-box agent drive (`--agent NAME|FILE`): a real agent, unmodified,
# talks to faultlab's scripted model server and MCP tool server; the kill
# points are those servers' own (faultlab/lab/blackbox/, faultlab/lab/servers/),
# each killed after a delay, as agents persist asynchronously, with the
# faults of its table (faultlab/lab/blackbox/faults.py).
from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from faultlab.lab.blackbox.drive import BlackboxOptions, reference_dir, run_blackbox_reference
from faultlab.lab.blackbox.faults import BLACKBOX_FAULTS, agent_fault
from faultlab.lab.drives.protocol import PlanContext, SingleDrive, coverage_result
from faultlab.lab.errors import LabUsageError
from faultlab.lab.faults.fault import Planning, all_names, parse_fault_names, plan_faults
from faultlab.lab.oracle.case import Case, CaseResult
from faultlab.lab.process.live import kill_all
from faultlab.lab.process.reference import Reference
from faultlab.lab.servers.points import parse_kill_point
from faultlab.lab.servers.records import GateRecord
from faultlab.lab.servers.rig import tool_note
from faultlab.scenario import Scenario

__all__ = ["AgentDrive"]


@dataclass(frozen=True, slots=True)
class AgentDrive(SingleDrive):
    """The black-box drive over `options` (the agent, its delays, repeats)."""

    options: BlackboxOptions
    agent: str
    name: str = "agent"
    coverage_fault: str = "reference"
    faults: tuple[str, ...] = tuple(BLACKBOX_FAULTS)
    all_faults: tuple[str, ...] = all_names(BLACKBOX_FAULTS)

    @property
    def workdir(self) -> Path:
        return self.options.workdir

    def reference(self, path: str, scenario: Scenario) -> Reference:
        return run_blackbox_reference(path, scenario, self.options)

    def plan(self, reference: Reference, faults: Sequence[str], context: PlanContext
             ) -> list[Case]:  # fmt: skip
        return plan_faults(BLACKBOX_FAULTS, reference, faults, Planning(self.options))

    def coverage(self, case: Case, reference: Reference, faults: Sequence[str]) -> CaseResult:
        # The scenario's declared `boundaries` name probe boundaries, which a
        # black box never reports; a script whose steps call tools must have
        # reached the MCP tool server.
        result = coverage_result(
            case, reference, declared=False, tool_boundary="tool/received#1",
            seen="the agent never called the MCP tool server in its fault-free run (does it "
            "see the tools? the adapter's MCP config, allowed tools)",
        )  # fmt: skip
        # The scripted model calling a tool the agent had not offered is said
        # even when the run passed (the agent may have coped by luck).
        note = tool_note(cast("list[GateRecord]", list(reference.trace)))
        # Its folder is the fault-free run's: the requests (records.jsonl),
        # the agent's stdout/stderr per run, its session files (final-*).
        where = reference_dir(self.options, reference.scenario_path)
        artifacts = {"dir": str(where), "records": str(where / "records.jsonl")}
        return dataclasses.replace(result, artifacts={**artifacts, **result.artifacts},
                                   detail="; ".join(d for d in (result.detail, note) if d))

    def run(self, case: Case, reference: Reference) -> CaseResult:
        return agent_fault(case.fault).run(case, reference, self.options)

    def parse_faults(self, names: Sequence[str]) -> tuple[str, ...]:
        return parse_fault_names(names, BLACKBOX_FAULTS, drive=self.name)

    def parse_occurrence(self, text: str, fault: str) -> str:
        point_text, _, repeat = text.partition("~")
        if repeat and not (repeat.isascii() and repeat.isdigit()):
            raise LabUsageError(f"{text}: a repeat is ~N, like tool/applied#1@200ms~2")
        return f"{parse_kill_point(point_text)}" + (f"~{repeat}" if repeat else "")

    def check_applies(self, case: Case, reference: Reference) -> None:
        point = parse_kill_point(case.occurrence.partition("~")[0])
        if point.occurrence not in reference.occurrences:
            reached = ", ".join(dict.fromkeys(reference.occurrences[:8]))
            raise LabUsageError(f"{Path(case.scenario).name}: the fault-free run of the agent "
                                f"never reaches {point.occurrence} (it reaches: {reached}, "
                                "...)")  # fmt: skip

    def kill_all(self) -> None:
        kill_all()

    def run_options(self) -> dict[str, Any]:
        return {"agent": self.agent, "delays": list(self.options.delays_ms),
                "repeats": self.options.repeats}  # fmt: skip
