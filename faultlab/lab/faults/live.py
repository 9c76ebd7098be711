# The faults beyond SIGKILL that need a live child: where each is injected
# (which boundary occurrences make cases), how (what the lab does while the
# child is parked), and the guarantees only they can break:
#   io-error              the next flush fails: its write or its fsync, EIO or
#   (and io-error-enospc, ENOSPC, one fault each (ioerror.py)     G9 fail-closed,
#   fsync-error,                                                 and after a
#   fsync-enospc)                                                failed fsync G4
#   cancel-in-checkpoint  SIGTERM while a tool checkpoint is pending: the
#                         call is ABORTED_BEFORE_DISPATCH, its body never runs
#   sigterm               graceful stop                       G10 graceful close
#   crash-in-repair       SIGKILL of the resumed child at each write of its
#                         repair; the next load converges     G8
#   second-writer         a second writer on the live session is refused and
#                         the log never forks                 SEQ_FORK
# power-loss and torn-write are derived offline (faultlab/lab/faults/powerstates.py,
# powerloss.py).
from __future__ import annotations

import dataclasses
import shutil
import signal
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import orjson

from faultlab.lab.faults.ioerror import IO_FAULTS, IoFault, check_io_error, inject
from faultlab.lab.faults.sigkill import run_case
from faultlab.lab.oracle.case import Case, CaseResult
from faultlab.lab.oracle.checks import event_key
from faultlab.lab.oracle.codes import Violation
from faultlab.lab.oracle.live import check_aborted, check_graceful_close
from faultlab.lab.oracle.verdicts import drifted, hang, hung
from faultlab.lab.process.probereport import ProbeReport
from faultlab.lab.process.reference import (
    LabOptions,
    Reference,
    make_child,
    run_to_exit,
    slug,
    store_of,
)
from faultlab.lab.process.spawn import Child, ChildHung
from faultlab.lab.process.target import session_files
from faultlab.lab.read.view import LogView
from faultlab.userfiles import TAIL_BYTES, copy_target, read_target

__all__ = [
    "CANCEL_WHERE",
    "IO_WHERE",
    "LIVE_FAULTS",
    "LIVE_WHERE",
    "REPAIR_WHERE",
    "SECOND_WRITER_WHERE",
    "SIGTERM_WHERE",
    "run_cancel_case",
    "run_crash_in_repair_case",
    "run_io_case",
    "run_second_writer_case",
    "run_sigterm_case",
]

# The boundaries whose every (top-level) occurrence is a case of each live
# fault: the fault tables (table.py, acp/faults.py) bind them as `where`.
IO_WHERE = ("request/logged", "tool/logged", "step/logged", "turn/logged")
CANCEL_WHERE = ("tool/logged",)
SIGTERM_WHERE = (
    "turn/started", "request/logged", "request/durable", "model/chunk",
    "assistant/recorded", "tool/logged", "tool/durable", "tool/effect", "tool/returned",
    "step/logged", "step/durable", "turn/logged", "turn/durable",
)  # fmt: skip
REPAIR_WHERE = ("request/durable", "tool/durable", "tool/effect")
SECOND_WRITER_WHERE = ("request/durable", "tool/durable")
LIVE_WHERE: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(IO_FAULTS, IO_WHERE),
    "cancel-in-checkpoint": CANCEL_WHERE,
    "sigterm": SIGTERM_WHERE,
    "crash-in-repair": REPAIR_WHERE,
    "second-writer": SECOND_WRITER_WHERE,
}
LIVE_FAULTS = tuple(LIVE_WHERE)
# Where the resumed child is killed while it commits its repair.
_REPAIR_POINTS = ("repair/logged#1", "flush/written#1", "repair/durable#1")


def _signal(signum: int) -> Callable[[Child], bool]:
    def act(child: Child) -> bool:
        child.signal(signum)
        return False

    return act


def run_io_case(
    case: Case, reference: Reference, options: LabOptions, *, fault: IoFault
) -> CaseResult:
    """The next flush fails (its write or its fsync, EIO or ENOSPC: `fault`)."""
    return run_case(case, reference, options, act=inject(fault), checks=check_io_error(fault))


def run_sigterm_case(case: Case, reference: Reference, options: LabOptions) -> CaseResult:
    """A graceful stop at the occurrence: the turn must close durably (G10)."""
    return run_case(
        case, reference, options, act=_signal(signal.SIGTERM), checks=check_graceful_close
    )


def run_cancel_case(case: Case, reference: Reference, options: LabOptions) -> CaseResult:
    """SIGTERM while the tool's checkpoint is pending: ABORTED_BEFORE_DISPATCH."""
    message = _occurrence(reference, case.occurrence)
    act = _signal(signal.SIGTERM)
    return run_case(case, reference, options, act=act, checks=check_aborted(message["callId"]))


def _occurrence(reference: Reference, occurrence: str) -> ProbeReport:
    name, _, n = occurrence.partition("#")
    return next(m for m in reference.boundaries
                if m["boundary"] == name and m["n"] == int(n))  # fmt: skip


def _normal(view: LogView) -> list[tuple[int, str, bytes]]:
    return [event_key(event) for event in view.events]  # the oracle's event identity


def _one_writers_log(final: LogView, reference: LogView, parked: LogView) -> bool:
    """Whether `final` is what the first writer alone writes: the events on
    disk while it was parked exactly as the reference has them, then the
    reference's other events in any order.  The park lasts as long as the
    second and third writers take, and a tool's latency timer that was
    running when it began may run out meanwhile: that call then returns
    before calls it returned after in the fault-free run (a valid order of
    the same events, with other seqs cited).  A second writer's events would
    be extra ones, and a lost event a missing one."""
    head = len(parked.events)
    if _normal(final)[:head] != _normal(reference)[:head]:
        return False

    def unordered(view: LogView) -> Counter[tuple[str, bytes]]:
        return Counter(
            (e.type, orjson.dumps({k: v for k, v in e.data.items() if k != "sourceEventSeqs"},
                                  option=orjson.OPT_SORT_KEYS))
            for e in view.events[head:]
        )  # fmt: skip

    return unordered(final) == unordered(reference)


def run_crash_in_repair_case(case: Case, reference: Reference, options: LabOptions) -> CaseResult:
    """Kill at the occurrence, then kill the resumed child at every write of its
    repair; every interrupted repair must converge on the uninterrupted one."""
    started = time.monotonic()
    # Its own work directory: the real [sigkill] case of this occurrence may
    # be running at the same time under --jobs.
    base_options = dataclasses.replace(options, workdir=options.workdir / "repair-base")
    base = run_case(Case(case.scenario, case.occurrence, "sigkill"), reference, base_options)
    if base.verdict != "pass" or "crashed" not in base.artifacts:
        return CaseResult(case, base.verdict, base.violations, time.monotonic() - started,
                          base.detail, base.artifacts)  # fmt: skip
    where = options.workdir / "cases" / slug(case.id)
    store = store_of(options, reference.scenario)
    crashed = Path(base.artifacts["crashed"]).read_bytes()
    uninterrupted = store.parse(Path(base.artifacts["repaired"]).read_bytes(), "repaired")
    violations: list[Violation] = []
    for point in _REPAIR_POINTS:
        session = where / point.replace("/", "_").replace("#", "_") / "session"
        shutil.rmtree(session.parent, ignore_errors=True)
        session.mkdir(parents=True)
        store.put(session, crashed)
        _copy_ledger(Path(base.artifacts["dir"]) / "session", session)
        killer = make_child(options, case.scenario, session, "repair", "killed", armed=point)
        try:
            with killer:
                if killer.run_until_parked_or_exit(options.timeout) is None:
                    killer.wait(options.timeout)
                    continue  # this repair has no such write: nothing to interrupt
                killer.kill()
                killer.wait(options.timeout)
            run_to_exit(make_child(options, case.scenario, session, "repair", "again"),
                         options.timeout)  # fmt: skip
        except ChildHung as exc:
            violations.append(hang(f"repair killed at {point}: {exc}"))
            continue
        converged = store.view(session)
        if _normal(converged) != _normal(uninterrupted):
            violations.append(Violation(
                "REPAIR_NOT_IDEMPOTENT",
                f"a repair killed at {point} converged on {len(converged.events)} event(s), "
                f"not on the {len(uninterrupted.events)} of an uninterrupted repair",
                {"killedAt": point, "events": len(converged.events),
                 "expected": len(uninterrupted.events)},
            ))  # fmt: skip
    return CaseResult(case, "fail" if violations else "pass", tuple(violations),
                      time.monotonic() - started, "", {"dir": str(where)})  # fmt: skip


def _copy_ledger(source: Path, session: Path) -> None:
    _log, ledger = session_files(source)
    copy_target(ledger, session / ledger.name, what="world ledger")  # bounded, no link


def _lock_state(lock: Path) -> tuple[int, bytes] | None:
    """The lock file's inode and bytes (None: there is none, e.g. a target
    that locks some other way: then nothing is compared)."""
    try:
        inode = lock.lstat().st_ino
    except OSError:
        return None
    data = read_target(lock, what="lock file", limit=TAIL_BYTES)  # bounded, no link
    return None if data is None else (inode, data)


def run_second_writer_case(case: Case, reference: Reference, options: LabOptions) -> CaseResult:
    """While the target is parked mid-run, a second writer opens the session,
    then a third; each must be refused without touching the log or the lock."""
    started = time.monotonic()
    where = options.workdir / "cases" / slug(case.id)
    shutil.rmtree(where, ignore_errors=True)
    session = where / "session"
    store = store_of(options, reference.scenario)
    violations: list[Violation] = []
    first = make_child(options, case.scenario, session, "run", "first", armed=case.occurrence)
    try:
        with first:
            if first.run_until_parked_or_exit(options.timeout) is None:
                first.wait(options.timeout)
                verdict, violations = drifted("never parked")
                return CaseResult(case, verdict, tuple(violations))
            before = store.take(session)
            lock = session / f"{store.log_name}.lock"  # docs/log-format.md 6.4
            held = _lock_state(lock)
            # A third writer after a refused second one: a refusal must leave
            # the live writer's lock as it was, or the next writer gets in.
            for writer in ("second", "third"):
                child = make_child(options, case.scenario, session, "resume", writer)
                status = run_to_exit(child, options.timeout)
                after = store.take(session)
                if status.returncode == 0 or after != before:
                    violations.append(Violation(
                        "SEQ_FORK",
                        f"a {writer} writer on the live session exited {status.returncode} and "
                        + ("changed the log" if after != before else "was not refused"),
                        {"writer": writer, "status": status.returncode, "changed": after != before},
                    ))  # fmt: skip
                    break
                if held is not None and _lock_state(lock) != held:
                    violations.append(Violation(
                        "SEQ_FORK",
                        f"the {writer} writer was refused but left the live writer's lock file "
                        f"{lock.name} " + ("deleted" if not lock.exists() else "changed"),
                        {"writer": writer, "lock": lock.name},
                    ))  # fmt: skip
                    held = _lock_state(lock)
            first.reply("continue")
            while first.run_until_parked_or_exit(options.timeout) is not None:
                first.reply("continue")
            done = first.wait(options.timeout)
    except ChildHung as exc:
        verdict, violations = hung(str(exc))
        return CaseResult(case, verdict, tuple(violations), time.monotonic() - started)
    final = store.view(session)
    forked = [p for p in final.problems if p.code in ("SEQ_GAP", "SEQ_DUPLICATE")]
    if forked or not _one_writers_log(final, reference.log, store.parse(before, "parked")):
        violations.append(Violation(
            "SEQ_FORK",
            "after a second writer, the session log is not the one a single writer writes"
            + (f": {forked[0].message}" if forked else ""),
            {"problems": [p.message for p in forked]},
        ))  # fmt: skip
    if done.returncode != 0:
        violations.append(Violation(
            "SEQ_FORK", f"the first writer exited {done.returncode} after the second one tried",
            {"status": done.returncode},
        ))  # fmt: skip
    return CaseResult(case, "fail" if violations else "pass", tuple(violations),
                      time.monotonic() - started, "", {"dir": str(where)})  # fmt: skip
