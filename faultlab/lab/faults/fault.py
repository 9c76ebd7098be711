# A fault as a value, as etcd's robustness suite has one `Failpoint` per way
# a member is hurt: its name, what it does, the boundaries it is injected at,
# whether `--faults all` runs it, how its cases are planned from the
# fault-free run and how one case runs, generic over the options of the
# drive that runs it.  Each drive keeps its faults in a table of these (the
# classic drive's in faults/table.py, the ACP drive's in acp/faults.py, the
# agent drive's in blackbox/faults.py, the app drive's in apps/faults.py) and
# dispatches through it; what tells two faults of one family apart (what is
# killed, which bytes survive, which boundaries) is bound into the entry.
# This module is also the one place that reads the fault names a user gives.
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Generic, TypeVar

from faultlab.lab.errors import LabUsageError
from faultlab.lab.faults.double import DEFAULT_MAX_DOUBLE, PlanProgress
from faultlab.lab.oracle.case import Case, CaseResult
from faultlab.lab.process.probereport import ProbeReport
from faultlab.lab.process.reference import Reference

__all__ = [
    "Fault",
    "FaultTable",
    "Keep",
    "Planning",
    "all_names",
    "at_where",
    "every_occurrence",
    "fault_named",
    "fault_table",
    "parse_fault_names",
    "plan_fault_cases",
    "plan_faults",
]

OptionsT = TypeVar("OptionsT")  # the options of the drive that runs the fault


@dataclass(frozen=True, slots=True)
class Planning(Generic[OptionsT]):
    """What a planner may need beyond the fault-free run: the drive's
    `options` (faults planned by running the target, double-sigkill, run it
    with them, `jobs` at a time, at most `max_double` cases per scenario,
    telling `progress`; the agent's delays, an app's resume styles)."""

    options: OptionsT | None = None
    max_double: int = DEFAULT_MAX_DOUBLE
    jobs: int = 1
    progress: PlanProgress | None = None

    def needs_options(self, fault: str) -> OptionsT:
        if self.options is None:
            raise LabUsageError(f"{fault} cases are planned with the drive's options: "
                                "the planner needs them")  # fmt: skip
        return self.options


@dataclass(frozen=True, slots=True)
class Fault(Generic[OptionsT]):
    """One way a drive hurts a target.  `planner`: its cases from a fault-free
    run that exited 0 (given the fault itself: its name, `where`); `run`: one
    of them, with the drive's options; `where`: the boundaries it is
    injected at (None: any boundary occurrence); `in_all`: whether `--faults
    all` runs it; `by_running`: its planning runs the target (so it is planned
    after the others, with `Planning.options`); `needs_tools`: it applies
    only to a scenario whose script calls tools (the coverage check's
    FAULT_NOT_PLANNED is said only where it applies); `needs_trace`: its
    cases are judged on the fault-free run's system calls, so the reference
    run is traced only when a planned fault needs it (issue 34)."""

    name: str
    summary: str
    planner: Callable[[Fault[OptionsT], Reference, Planning[OptionsT]], list[Case]]
    run: Callable[[Case, Reference, OptionsT], CaseResult]
    where: tuple[str, ...] | None = None
    in_all: bool = True
    by_running: bool = False
    needs_tools: bool = False
    needs_trace: bool = False

    def plan(self, reference: Reference, planning: Planning[OptionsT]) -> list[Case]:
        """Its cases from the fault-free run `reference` (which exited 0)."""
        return self.planner(self, reference, planning)

    def check_at(self, boundary: str) -> None:
        """A usage error when the fault is never injected at `boundary`."""
        if self.where is not None and boundary not in self.where:
            raise LabUsageError(f"fault {self.name!r} cannot be injected at {boundary}: it "
                                f"needs one of {', '.join(self.where)}")  # fmt: skip



# A drive's faults by name, in the order reports list them.
FaultTable = Mapping[str, Fault[OptionsT]]


def fault_table(faults: Iterable[Fault[OptionsT]]) -> Mapping[str, Fault[OptionsT]]:
    """A read-only table of `faults` by name, in their order (a name given
    twice is a bug in the table)."""
    table: dict[str, Fault[OptionsT]] = {}
    for fault in faults:
        if fault.name in table:
            raise ValueError(f"fault {fault.name!r} is in the table twice")
        table[fault.name] = fault
    return MappingProxyType(table)


def all_names(
    table: Mapping[str, Fault[OptionsT]], *, by_running: bool = True
) -> tuple[str, ...]:
    """What `--faults all` means for the drive of `table`; without the faults
    planned by running the target when not `by_running` (what fuzz can draw
    and a zoo variant's "all": a crash during recovery is named there)."""
    return tuple(name for name, fault in table.items()
                 if fault.in_all and (by_running or not fault.by_running))  # fmt: skip


def fault_named(table: Mapping[str, Fault[OptionsT]], name: str, *, drive: str) -> Fault[OptionsT]:
    """The entry of `table` named `name`, or a usage error naming the drive's faults."""
    fault = table.get(name)
    if fault is None:
        raise LabUsageError(f"unknown fault {name!r} for the {drive} drive "
                            f"(its faults: {', '.join(table)})")  # fmt: skip
    return fault


def parse_fault_names(
    names: Iterable[str], table: Mapping[str, Fault[OptionsT]], *, drive: str,
    as_given: bool = False, by_running: bool = True,
) -> tuple[str, ...]:  # fmt: skip
    """The fault names a user gave (`all` is the table's `in_all` faults,
    those planned by running the target only if `by_running`; blanks are
    ignored), each checked against `table`: in table order, or (`as_given`)
    in the order given, each once.  None at all is a usage error."""
    given = [name.strip() for name in names if name.strip()]
    if not given:
        raise LabUsageError("--faults: name at least one fault, or 'all'")
    every = all_names(table, by_running=by_running)
    expanded = [n for name in given for n in (every if name == "all" else (name,))]
    chosen = [fault_named(table, name, drive=drive).name for name in expanded]
    if as_given:
        return tuple(dict.fromkeys(chosen))
    return tuple(name for name in table if name in chosen)


def plan_faults(
    table: Mapping[str, Fault[OptionsT]], reference: Reference, names: Sequence[str],
    planning: Planning[OptionsT],
) -> list[Case]:  # fmt: skip
    """The cases of the faults of `table` named in `names`, fault by fault in
    table order, those planned by running the target last."""
    wanted = [f for f in table.values() if f.name in names]
    return [case for f in sorted(wanted, key=lambda f: f.by_running)
            for case in f.plan(reference, planning)]  # fmt: skip


# -- planners many faults share ------------------------------------------------

# Whether a case is planned at trace[index] beyond its boundary (an io fault
# needs a flush left to fail there).
Keep = Callable[[Sequence[ProbeReport], int], bool]


def plan_fault_cases(
    reference: Reference, fault: str, where: Sequence[str], *, keep: Keep | None = None
) -> list[Case]:
    """A case of `fault` (its name) at every top-level occurrence of a
    boundary in `where` that `keep` keeps, in trace order."""
    cases = []
    for index, message in enumerate(reference.trace):
        if message.get("boundary") not in where:
            continue
        if message.get("parentCallId") is not None:
            continue  # nested calls have no checkpoint of their own
        if keep is not None and not keep(reference.trace, index):
            continue  # e.g. no flush left to fail (every-event's last turn/logged)
        cases.append(Case(reference.scenario_path, f"{message['boundary']}#{message['n']}", fault))
    return cases


def every_occurrence(fault: Fault[OptionsT], reference: Reference,
                     _planning: Planning[OptionsT]) -> list[Case]:  # fmt: skip
    """A case at every boundary occurrence of the fault-free run (SIGKILL's plan)."""
    return [Case(reference.scenario_path, o, fault.name) for o in reference.occurrences]


def at_where(fault: Fault[OptionsT], reference: Reference,
             _planning: Planning[OptionsT]) -> list[Case]:  # fmt: skip
    """A case at every top-level occurrence of the fault's `where` boundaries."""
    return plan_fault_cases(reference, fault.name, fault.where or ())
