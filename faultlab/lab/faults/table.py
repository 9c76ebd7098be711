# The faults of the classic drive as a table (as etcd's robustness suite has
# one `Failpoint` per way a member is hurt): each fault is one `Fault` value
# that says where it is injected, whether `all` runs it, how its cases are
# planned from the fault-free run and how one case runs.  The engine and the
# drives look a fault up here by name; nothing in the lab dispatches on fault
# names.  Adding a fault is one entry below plus its tests.
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from faultlab.lab.errors import LabUsageError
from faultlab.lab.faults.corruption import CORRUPT_FAULT, plan_corrupt_cases, run_corrupt_case
from faultlab.lab.faults.double import (
    DEFAULT_MAX_DOUBLE,
    DOUBLE_FAULT,
    PlanProgress,
    plan_double_cases,
    run_double_case,
)
from faultlab.lab.faults.ioerror import IO_FAULTS
from faultlab.lab.faults.live import (
    LIVE_WHERE,
    plan_fault_cases,
    run_cancel_case,
    run_crash_in_repair_case,
    run_io_case,
    run_second_writer_case,
    run_sigterm_case,
)
from faultlab.lab.faults.sigkill import run_case
from faultlab.lab.oracle.case import Case, CaseResult
from faultlab.lab.process.reference import LabOptions, Reference

__all__ = [
    "CLASSIC_FAULTS",
    "Fault",
    "Planning",
    "classic_fault",
]


@dataclass(frozen=True, slots=True)
class Planning:
    """What a planner may need beyond the fault-free run: faults planned by
    running the target (double-sigkill) run it with `options`, `jobs` at a
    time, at most `max_double` cases per scenario, telling `progress`."""

    options: LabOptions | None = None
    max_double: int = DEFAULT_MAX_DOUBLE
    jobs: int = 1
    progress: PlanProgress | None = None


Planner = Callable[[Reference, Planning], list[Case]]
Runner = Callable[[Case, Reference, LabOptions], CaseResult]


@dataclass(frozen=True, slots=True)
class Fault:
    """One way the lab hurts a target.  `where`: the boundaries it is injected
    at (None: every boundary occurrence, or planned otherwise); `in_all`:
    whether `--faults all` runs it; `by_running`: its planning runs the
    target (so it is planned after the others, and needs `Planning.options`);
    `applies`: whether a scenario gives it any case at all (the coverage
    check's FAULT_NOT_PLANNED is said only where it applies)."""

    name: str
    summary: str
    plan: Planner
    run: Runner
    where: tuple[str, ...] | None = None
    in_all: bool = True
    by_running: bool = False
    needs_tools: bool = False

    def check_at(self, boundary: str) -> None:
        """A usage error when the fault is never injected at `boundary`."""
        if self.where is not None and boundary not in self.where:
            raise LabUsageError(f"fault {self.name!r} cannot be injected at {boundary}: it "
                                f"needs one of {', '.join(self.where)}")  # fmt: skip


def _every_occurrence(reference: Reference, _planning: Planning) -> list[Case]:
    return [Case(reference.scenario_path, o, "sigkill") for o in reference.occurrences]


def _power(fault: str) -> Planner:
    def plan(reference: Reference, _planning: Planning) -> list[Case]:
        from faultlab.lab.faults.powerloss import plan_power_cases

        return plan_power_cases(reference, fault)

    return plan


def _run_power(case: Case, reference: Reference, options: LabOptions) -> CaseResult:
    from faultlab.lab.faults.powerloss import run_power_case  # its states module is large

    return run_power_case(case, reference, options)


def _live(fault: str) -> Planner:
    return lambda reference, _planning: plan_fault_cases(reference, fault)


def _double(reference: Reference, planning: Planning) -> list[Case]:
    if reference.returncode != 0:
        return []
    if planning.options is None:
        raise LabUsageError(f"{DOUBLE_FAULT} cases are planned by running the target: "
                            "the planner needs its options")  # fmt: skip
    return plan_double_cases(reference, planning.options, max_cases=planning.max_double,
                             jobs=planning.jobs, progress=planning.progress)  # fmt: skip


_IO_SUMMARY = {
    "io-error": "the next flush's write fails with EIO",
    "io-error-enospc": "the next flush's write fails with ENOSPC",
    "fsync-error": "the next flush's fsync fails with EIO",
    "fsync-enospc": "the next flush's fsync fails with ENOSPC",
}

# In the order reports list them (faultlab.probe.FAULTS, then double-sigkill).
CLASSIC_FAULTS: Mapping[str, Fault] = {f.name: f for f in (
    Fault("sigkill", "SIGKILL of the process group", _every_occurrence, run_case),
    Fault("power-loss", "SIGKILL, then every file cut back to its last fsync",
          _power("power-loss"), _run_power, where=("flush/written",)),
    Fault("torn-write", "as power-loss, keeping a prefix of the unsynced bytes",
          _power("torn-write"), _run_power, where=("flush/written",)),
    *(Fault(name, _IO_SUMMARY[name], _live(name), run_io_case, where=LIVE_WHERE[name])
      for name in IO_FAULTS),
    Fault("cancel-in-checkpoint", "SIGTERM while a tool checkpoint is pending",
          _live("cancel-in-checkpoint"), run_cancel_case,
          where=LIVE_WHERE["cancel-in-checkpoint"], needs_tools=True),
    Fault("sigterm", "graceful stop", _live("sigterm"), run_sigterm_case,
          where=LIVE_WHERE["sigterm"]),
    Fault("crash-in-repair", "SIGKILL of the resumed child at each write of its repair",
          _live("crash-in-repair"), run_crash_in_repair_case,
          where=LIVE_WHERE["crash-in-repair"]),
    Fault("second-writer", "a second and a third writer on the live session",
          _live("second-writer"), run_second_writer_case, where=LIVE_WHERE["second-writer"]),
    Fault(CORRUPT_FAULT, "one committed line damaged before recovery",
          lambda reference, _planning: plan_corrupt_cases(reference), run_corrupt_case),
    # In `all` (issue 30: all means every fault), bounded by --max-double-cases.
    Fault(DOUBLE_FAULT, "SIGKILL, then SIGKILL again during recovery", _double,
          run_double_case, by_running=True),
)}  # fmt: skip


def classic_fault(name: str) -> Fault:
    """The classic drive's fault `name` (a usage error naming the known ones)."""
    fault = CLASSIC_FAULTS.get(name)
    if fault is None:
        raise LabUsageError(f"unknown fault {name!r} (faults: {', '.join(CLASSIC_FAULTS)})")
    return fault
