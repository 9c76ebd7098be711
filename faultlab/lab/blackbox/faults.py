# The faults of the agent drive as a table (faults/fault.py's `Fault` over
# `BlackboxOptions`): both kill the agent at a kill point of faultlab's own
# servers, after the point's delay, and differ only in what is killed (the
# `AgentKill` bound into each entry): `sigkill` the agent's whole process
# tree, `sigkill-agent` the agent's own process group, sparing a tool server
# it started in a group of its own, which may then finish what it was doing.
# The drive dispatches through this table; adding an agent fault is one entry
# below plus its tests.
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from faultlab.lab.blackbox.drive import (
    AgentKill,
    BlackboxOptions,
    plan_kill_points,
    run_blackbox_case,
)
from faultlab.lab.faults.fault import Fault, Planning, fault_named, fault_table
from faultlab.lab.oracle.case import Case, CaseResult
from faultlab.lab.process.reference import Reference

__all__ = ["BLACKBOX_FAULTS", "agent_fault", "plan_blackbox_cases"]

AgentFault = Fault[BlackboxOptions]


def _points(fault: AgentFault, reference: Reference,
            planning: Planning[BlackboxOptions]) -> list[Case]:  # fmt: skip
    return plan_kill_points(reference, planning.needs_options(fault.name), fault.name)


def _kills(kill: AgentKill) -> Callable[[Case, Reference, BlackboxOptions], CaseResult]:
    def run(case: Case, reference: Reference, options: BlackboxOptions) -> CaseResult:
        return run_blackbox_case(case, reference, options, kill=kill)

    return run


BLACKBOX_FAULTS: Mapping[str, AgentFault] = fault_table((
    Fault("sigkill", "SIGKILL of the agent's whole process tree", _points,
          _kills(AgentKill(spares_others=False))),
    Fault("sigkill-agent", "SIGKILL of the agent's own process group; a tool server it "
          "started elsewhere lives on", _points, _kills(AgentKill(spares_others=True))),
))  # fmt: skip


def agent_fault(name: str) -> AgentFault:
    """The agent drive's fault `name` (a usage error naming the known ones)."""
    return fault_named(BLACKBOX_FAULTS, name, drive="agent")


def plan_blackbox_cases(
    reference: Reference, options: BlackboxOptions, faults: Sequence[str] = ("sigkill",)
) -> list[Case]:
    """The cases of `faults` (names of the table), in the order given, each
    fault's: every kill point at every delay, `options.repeats` times."""
    entries = [agent_fault(name) for name in faults]  # every name checked first
    return [case for entry in entries for case in entry.plan(reference, Planning(options))]
