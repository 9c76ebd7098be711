# The faults of the classic drive as a table (fault.py's `Fault`, over the
# classic drive's `LabOptions`): each entry says where the fault is injected,
# whether `all` runs it, how its cases are planned from the fault-free run and
# how one case runs, with what sets it apart from its family bound in (an io
# fault's failing call and errno, whether a power loss keeps a torn prefix).
# The drive looks a fault up here by name and calls it; adding a fault is one
# entry below plus its tests.
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from faultlab.lab.faults.corruption import CORRUPT_FAULT, plan_corrupt_cases, run_corrupt_case
from faultlab.lab.faults.double import DOUBLE_FAULT, plan_double_cases, run_double_case
from faultlab.lab.faults.fault import (
    Fault,
    Planning,
    at_where,
    every_occurrence,
    fault_named,
    fault_table,
    plan_fault_cases,
)
from faultlab.lab.faults.ioerror import IO_FAULTS, IoFault, flush_follows
from faultlab.lab.faults.live import (
    CANCEL_WHERE,
    IO_WHERE,
    REPAIR_WHERE,
    SECOND_WRITER_WHERE,
    SIGTERM_WHERE,
    run_cancel_case,
    run_crash_in_repair_case,
    run_io_case,
    run_second_writer_case,
    run_sigterm_case,
)
from faultlab.lab.faults.sigkill import run_case
from faultlab.lab.oracle.case import Case, CaseResult
from faultlab.lab.process.probereport import ProbeReport
from faultlab.lab.process.reference import LabOptions, Reference

__all__ = ["CLASSIC_FAULTS", "classic_fault"]

ClassicFault = Fault[LabOptions]
_Runner = Callable[[Case, Reference, LabOptions], CaseResult]


def _flush_follows(io: IoFault) -> Callable[[ClassicFault, Reference, Planning[LabOptions]],
                                            list[Case]]:  # fmt: skip
    def keep(trace: Sequence[ProbeReport], index: int) -> bool:
        return flush_follows(trace, index, io)

    def plan(fault: ClassicFault, reference: Reference,
             _planning: Planning[LabOptions]) -> list[Case]:  # fmt: skip
        return plan_fault_cases(reference, fault.name, fault.where or (), keep=keep)

    return plan


def _io(name: str, io: IoFault) -> ClassicFault:
    def run(case: Case, reference: Reference, options: LabOptions) -> CaseResult:
        return run_io_case(case, reference, options, fault=io)

    return Fault(name, io.summary, _flush_follows(io), run, where=IO_WHERE)


def _power(fault: ClassicFault, reference: Reference,
           _planning: Planning[LabOptions]) -> list[Case]:  # fmt: skip
    from faultlab.lab.faults.powerloss import plan_power_cases  # its states module is large

    return plan_power_cases(reference, fault.name)


def _run_power(*, torn: bool) -> _Runner:
    def run(case: Case, reference: Reference, options: LabOptions) -> CaseResult:
        from faultlab.lab.faults.powerloss import run_power_case

        return run_power_case(case, reference, options, torn=torn)

    return run


def _corrupt(_fault: ClassicFault, reference: Reference,
             _planning: Planning[LabOptions]) -> list[Case]:  # fmt: skip
    return plan_corrupt_cases(reference)


def _double(fault: ClassicFault, reference: Reference,
            planning: Planning[LabOptions]) -> list[Case]:  # fmt: skip
    if reference.returncode != 0:
        return []
    return plan_double_cases(reference, planning.needs_options(fault.name),
                             max_cases=planning.max_double, jobs=planning.jobs,
                             progress=planning.progress)  # fmt: skip


# In the order reports list them (faultlab.probe.FAULTS, then double-sigkill).
CLASSIC_FAULTS: Mapping[str, ClassicFault] = fault_table((
    Fault("sigkill", "SIGKILL of the process group", every_occurrence, run_case),
    Fault("power-loss", "SIGKILL, then every file cut back to its last fsync",
          _power, _run_power(torn=False), where=("flush/written",), needs_trace=True),
    Fault("torn-write", "as power-loss, keeping a prefix of the unsynced bytes",
          _power, _run_power(torn=True), where=("flush/written",), needs_trace=True),
    *(_io(name, io) for name, io in IO_FAULTS.items()),
    Fault("cancel-in-checkpoint", "SIGTERM while a tool checkpoint is pending",
          at_where, run_cancel_case, where=CANCEL_WHERE, needs_tools=True),
    Fault("sigterm", "graceful stop", at_where, run_sigterm_case, where=SIGTERM_WHERE),
    Fault("crash-in-repair", "SIGKILL of the resumed child at each write of its repair",
          at_where, run_crash_in_repair_case, where=REPAIR_WHERE),
    Fault("second-writer", "a second and a third writer on the live session",
          at_where, run_second_writer_case, where=SECOND_WRITER_WHERE),
    Fault(CORRUPT_FAULT, "one committed line damaged before recovery", _corrupt,
          run_corrupt_case),
    # In `all` (issue 30: all means every fault), bounded by --max-double-cases.
    Fault(DOUBLE_FAULT, "SIGKILL, then SIGKILL again during recovery", _double,
          run_double_case, by_running=True),
))  # fmt: skip


def classic_fault(name: str) -> ClassicFault:
    """The classic drive's fault `name` (a usage error naming the known ones)."""
    return fault_named(CLASSIC_FAULTS, name, drive="classic")
