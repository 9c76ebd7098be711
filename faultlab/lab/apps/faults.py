# The faults of the app drive as a table (faults/fault.py's `Fault` over
# `AppOptions`), each with its own runner:
#   sigkill        the gate holds the armed boundary and the lab SIGKILLs the
#                  child's tree there; a second child resumes in the case's style
#   io-error       the child fails the armed store write with EIO itself
#                  (`--fail`), injected only at a store's writes (`where`)
#   second-writer  while the first child is held at a model or tool point, a
#                  second resumes the thread; only the framework's own resume
# A case's fault reads FAULT/STYLE/MODE (`sigkill/resume/sync`).  The drive
# dispatches through this table; adding an app fault is one entry below plus
# its tests.  The oracle is faultlab/lab/oracle/apps.py.
from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence

from faultlab.lab.apps.drive import WRITES, AppOptions, AppRig, plan_app_points
from faultlab.lab.apps.storeread import StoreUnreadable
from faultlab.lab.errors import LabUsageError
from faultlab.lab.faults.fault import Fault, Planning, fault_named, fault_table
from faultlab.lab.oracle.apps import AppObservation, check_app
from faultlab.lab.oracle.case import Case, CaseResult
from faultlab.lab.oracle.codes import Violation
from faultlab.lab.oracle.verdicts import Judged, drifted, hang, hung
from faultlab.lab.process.reference import Reference, read_ledger, slug
from faultlab.lab.servers.points import APP_BOUNDARIES, parse_kill_point
from faultlab.lab.servers.records import GateRecord

__all__ = [
    "APP_FAULTS",
    "app_fault",
    "run_app_case",
    "run_io_error_case",
    "run_second_writer_case",
    "run_sigkill_case",
]

AppFault = Fault[AppOptions]
# Where a second process resumes the thread while the first is held: the
# model and tool points (inside a store's write the first may hold its
# lock, and the second would only wait for it).
SECOND_WRITER_AT = ("model/request", "tool/started", "tool/effect")
# What a second writer is about; the held first writer was not killed, so
# what a kill there would lose (TOOL_INTENT_LOST) is the sigkill case's
# question, not this one's.
_SECOND_WRITER_CODES = ("SEQ_FORK", "UNKNOWN_OUTCOME_RERUN", "SIDE_EFFECT_DUPLICATED",
                        "PROVIDER_INVALID_HISTORY")  # fmt: skip


# -- one case ----------------------------------------------------------------


def _style(case: Case, options: AppOptions) -> str:
    """The case's resume style (its fault reads FAULT/STYLE/MODE), once its
    mode is checked to be the one `options` run."""
    _fault, style, mode = case.fault.split("/")
    if mode != options.durability:
        raise LabUsageError(f"{case.id}: planned for durability {mode}, "
                            f"run with {options.durability}")  # fmt: skip
    return style


def _rig(case: Case, options: AppOptions, *, armed: bool) -> AppRig:
    """The case's rig, its gate armed at the case's point when `armed`."""
    point = parse_kill_point(case.occurrence, boundaries=APP_BOUNDARIES)
    where = options.workdir / "app-cases" / slug(case.id)
    return AppRig(case.scenario, options, where, point if armed else None)


def _result(case: Case, rig: AppRig, started: float, judged: Judged) -> CaseResult:
    verdict, violations = judged
    artifacts = {"dir": str(rig.where), "records": str(rig.records)}
    return CaseResult(case, verdict, tuple(violations), time.monotonic() - started, "",
                      artifacts)  # fmt: skip


def _last_turn(records: Sequence[GateRecord]) -> int:
    turns = [int(r["turn"]) for r in records if r.get("fact") == "app/turn"]
    return turns[-1] if turns else 0


def _unreadable(when: str, error: StoreUnreadable) -> Judged:
    """The app's own loader cannot read its store: the app could not
    resume, and nothing it persisted can be judged (never read as empty)."""
    return "fail", [Violation("STORE_UNREADABLE", f"{when}: {error.reason}",
                              {"when": when, "reason": error.reason})]  # fmt: skip


def _recover(case: Case, reference: Reference, rig: AppRig, style: str, *, reached: bool,
             status: int | None, hung_run: str | None) -> Judged:  # fmt: skip
    """After the crash child: its verdict when it hung or never reached the
    point, else a second child resumes in `style` and the oracle judges."""
    if hung_run:
        return hung(hung_run)
    if not reached:
        return drifted(f"the app never reached {case.occurrence} (the fault-free run did); "
                       f"it exited {status}")  # fmt: skip
    crash = rig.gate.snapshot()
    try:
        at_kill = rig.persisted("at-kill")
    except StoreUnreadable as error:
        return _unreadable("at the kill", error)
    r_status, _, r_hung = rig.run(style, turn=_last_turn(crash))
    resume_name = f"run{rig.runs}-{style}"  # before a reading child takes the next number
    try:
        final = rig.persisted("final")
    except StoreUnreadable as error:
        return _unreadable("after the recovery", error)
    records = rig.gate.snapshot()
    observation = AppObservation(
        scenario=reference.scenario, crash=tuple(crash), resume=tuple(records[len(crash):]),
        ledger=read_ledger(rig.ledger), reference_ledger=reference.ledger,
        durable_at_kill=at_kill.durable(), final=final.history, style=style,
        resume_status=r_status or 0,
        resume_stderr=rig.tail(f"{resume_name}.stderr", 3000), forks=final.forks,
    )  # fmt: skip
    violations = check_app(observation)
    if r_hung:
        violations.append(hang(r_hung))
    return ("fail" if violations else "pass"), violations


def run_sigkill_case(case: Case, reference: Reference, options: AppOptions) -> CaseResult:
    """The gate holds the child at the case's point and the lab SIGKILLs its
    tree there; a second child resumes in the case's style."""
    started, style = time.monotonic(), _style(case, options)
    with _rig(case, options, armed=True) as rig:
        status, killed, hung_run = rig.run("run", armed=True)
        judged = _recover(case, reference, rig, style, reached=killed, status=status,
                          hung_run=hung_run)  # fmt: skip
    return _result(case, rig, started, judged)


def run_io_error_case(case: Case, reference: Reference, options: AppOptions) -> CaseResult:
    """The child fails the store write at the case's point with EIO itself
    and goes on as the app lets it; a second child resumes in the case's style."""
    started, style = time.monotonic(), _style(case, options)
    with _rig(case, options, armed=False) as rig:
        status, _killed, hung_run = rig.run("run", fail=case.occurrence)
        failed = any(r.get("fact") == "app/ioerror" for r in rig.gate.snapshot())
        judged = _recover(case, reference, rig, style, reached=failed, status=status,
                          hung_run=hung_run)  # fmt: skip
    return _result(case, rig, started, judged)


def run_second_writer_case(case: Case, reference: Reference, options: AppOptions) -> CaseResult:
    """While the first child is held at the armed point, a second one
    resumes the thread (the framework's own resume) to its exit; then the
    first goes on to its exit.  A refused second writer passes; one that
    runs a call again, or whose writes and the first's fork the checkpoint
    chain, fails."""
    started = time.monotonic()
    _style(case, options)
    with _rig(case, options, armed=True) as rig:
        judged = _second_writer(case, reference, rig)
    return _result(case, rig, started, judged)


def _second_writer(case: Case, reference: Reference, rig: AppRig) -> Judged:
    first = rig.start("run")
    if not rig.held(first):
        status, _, hung_run = rig.finish(first)
        if hung_run:
            return hung(hung_run)
        return drifted(f"the app never reached {case.occurrence} (the fault-free run did); "
                       f"it exited {status}")  # fmt: skip
    crash = rig.gate.snapshot()
    try:
        at_kill = rig.persisted("at-kill")
    except StoreUnreadable as error:
        first.process.kill_tree()  # the case ends here
        rig.finish(first)
        return _unreadable("while the first writer was held", error)
    second_status, _, second_hung = rig.run("resume", turn=_last_turn(crash))
    rig.gate.release(survivors_proceed=True)  # the held first writer goes on
    first_status, _, first_hung = rig.finish(first)
    try:
        final = rig.persisted("final")
    except StoreUnreadable as error:
        return _unreadable("after both writers", error)
    records = rig.gate.snapshot()
    observation = AppObservation(
        scenario=reference.scenario, crash=tuple(crash), resume=tuple(records[len(crash):]),
        ledger=read_ledger(rig.ledger), reference_ledger=reference.ledger,
        durable_at_kill=at_kill.durable(), final=final.history, style="resume",
        resume_status=0,  # a second writer that is refused does right
        forks=final.forks,
    )  # fmt: skip
    violations = [v for v in check_app(observation) if v.code in _SECOND_WRITER_CODES]
    # A live writer its framework refused because the store changed under
    # it (ADK's StaleSessionError; the child notes it) is the refusal the
    # guarantee asks for, not a fork: what the store holds is judged above.
    refused = any(r.get("fact") == "app/writer-refused" and r.get("action") == "run"
                  for r in records)  # fmt: skip
    if first_status != 0 and not first_hung and not refused:
        violations.append(Violation(
            "SEQ_FORK", f"the live writer exited {first_status} after a second writer "
            f"(which exited {second_status}) resumed its thread",
            {"status": first_status, "second": second_status}))  # fmt: skip
    violations += [hang(h) for h in (second_hung, first_hung) if h]
    return ("fail" if violations else "pass"), violations


# -- the table ---------------------------------------------------------------


def _points(*, styles: tuple[str, ...] | None = None) -> Callable[
        [AppFault, Reference, Planning[AppOptions]], list[Case]]:  # fmt: skip
    """The planner of an app fault: its `where` boundaries, with every resume
    style planned for the app, or `styles` alone."""

    def plan(fault: AppFault, reference: Reference,
             planning: Planning[AppOptions]) -> list[Case]:  # fmt: skip
        options = planning.needs_options(fault.name)
        return plan_app_points(reference, options, fault.name, where=fault.where,
                               styles=styles)  # fmt: skip

    return plan


APP_FAULTS: Mapping[str, AppFault] = fault_table((
    Fault("sigkill", "SIGKILL of the app child's tree at the boundary", _points(),
          run_sigkill_case),
    Fault("io-error", "the child's store write at the boundary fails with EIO", _points(),
          run_io_error_case, where=WRITES),
    Fault("second-writer", "a second child resumes the thread while the first is held",
          _points(styles=("resume",)), run_second_writer_case, where=SECOND_WRITER_AT),
))  # fmt: skip


def app_fault(name: str) -> AppFault:
    """The app drive's fault `name`, or of a case's FAULT/STYLE/MODE (a
    usage error naming the known ones)."""
    return fault_named(APP_FAULTS, name.split("/")[0], drive="app")


def run_app_case(case: Case, reference: Reference, options: AppOptions) -> CaseResult:
    """One planned app case, run by its fault's runner."""
    return app_fault(case.fault).run(case, reference, options)
