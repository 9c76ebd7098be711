# The SIGKILL case, and the crash phase every live fault shares: arm the kill
# point, wait for the child to park there, act (SIGKILL its process group, or
# the fault's own action), then let the target repair the crashed session
# (`--repair-only`) and resume it to completion, and hand everything observed
# to the oracle.
from __future__ import annotations

import contextlib
import os
import shutil
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from faultlab.lab.oracle.case import Case, CaseResult, Verdict
from faultlab.lab.oracle.checks import Observation, check_case
from faultlab.lab.oracle.claims import cut_files_of
from faultlab.lab.oracle.codes import Violation
from faultlab.lab.oracle.verdicts import drifted, hung
from faultlab.lab.process.drift import drift
from faultlab.lab.process.probereport import ProbeReport
from faultlab.lab.process.reference import (
    LabOptions,
    Reference,
    make_child,
    read_ledger,
    run_to_exit,
    slug,
    store_of,
    write_trace,
)
from faultlab.lab.process.spawn import Child, ChildExit, ChildHung
from faultlab.lab.process.target import Mode, session_files
from faultlab.lab.read.view import LogView

__all__ = ["Act", "ChildMaker", "CrashPhase", "ExtraChecks", "crash_phase", "recover", "run_case"]

# While the child is parked at the kill point: inject the fault (send a signal,
# answer the probe).  Returns False to let the child go on running to its own
# exit instead of being SIGKILLed.
Act = Callable[[Child], bool]
# Fault-specific checks on what was observed (and how the crash child ended).
ExtraChecks = Callable[[Observation, ChildExit | None], list[Violation]]


class ChildMaker(Protocol):
    """Makes a child of a case (`make_child`'s signature)."""

    def __call__(
        self, options: LabOptions, scenario: str, session: Path, mode: Mode, name: str,
        armed: str | None = None, after: int | None = None,
    ) -> Child: ...  # fmt: skip


def _sigkill(_child: Child) -> bool:
    return True


@dataclass(frozen=True, slots=True)
class CrashPhase:
    """How the crash child of a case went: its probe trace (also written to
    `where/trace.jsonl`), the exit status when the fault let it run on, and
    the case's verdict already when it hung or drifted from the reference."""

    trace: tuple[ProbeReport, ...]
    status: ChildExit | None
    failure: tuple[Verdict, list[Violation], str] | None
    # With `let_go`: the crash child, SIGKILLed and let go before it was
    # reaped (the caller settles it), and its pidfd (the caller closes it).
    let_go: tuple[Child, int] | None = None


def crash_phase(
    case: Case, reference: Reference, options: LabOptions, *, session: Path, where: Path,
    act: Act = _sigkill, let_go: bool = False,
) -> CrashPhase:  # fmt: skip
    """Run the target armed at `case.occurrence`, wait for it to park there and
    inject the fault (`act`): SIGKILL its group, or let it run on to its exit.
    With `let_go`, a forked child SIGKILLed by `act` without drifting is let
    go at once (see `Child.kill_and_let_go`) instead of waited for."""
    crash = make_child(options, case.scenario, session, "run", "crash", armed=case.occurrence)
    status: ChildExit | None = None
    failure: tuple[Verdict, list[Violation], str] | None = None
    gone: tuple[Child, int] | None = None
    with crash:
        try:
            parked = crash.run_until_parked_or_exit(options.timeout)
            off_path = drift(crash.trace, reference)
            if parked is None:
                exited = crash.wait(options.timeout)
                off_path = (
                    f"exited with status {exited.returncode} without reaching {case.occurrence}"
                )
            elif act(crash):
                pidfd = crash.kill_and_let_go() if let_go and off_path is None else None
                if pidfd is not None:
                    gone = (crash, pidfd)
                else:
                    crash.kill()
                    crash.wait(options.timeout)
            else:
                crash.reply("continue")
                try:
                    while crash.run_until_parked_or_exit(options.timeout) is not None:
                        crash.reply("continue")  # a target parked twice: not ours to judge
                    status = crash.wait(options.timeout)
                except ChildHung as exc:
                    crash.kill()
                    failure = (*hung(f"after the fault: {exc}"), "")
            if failure is None and off_path is not None:
                failure = (*drifted(off_path), off_path)
        except ChildHung as exc:
            crash.kill()
            failure = (*hung(f"{case.occurrence}: {exc}"), "")
    write_trace(where / "trace.jsonl", crash.trace)
    return CrashPhase(tuple(crash.trace), status, failure, gone)


def run_case(
    case: Case, reference: Reference, options: LabOptions, *, act: Act = _sigkill,
    checks: ExtraChecks | None = None,
) -> CaseResult:  # fmt: skip
    """Stop the target at `case.occurrence`, inject the fault (`act`; SIGKILL by
    default), let it repair and resume, and check every guarantee."""
    started = time.monotonic()
    where = options.workdir / "cases" / slug(case.id)
    shutil.rmtree(where, ignore_errors=True)
    session = where / "session"
    store = store_of(options, reference.scenario)
    log_path = store.log_path(session)
    artifacts = {"dir": str(where)}

    def result(verdict: Any, violations: list[Violation], detail: str = "") -> CaseResult:
        return CaseResult(
            case, verdict, tuple(violations), time.monotonic() - started, detail, artifacts
        )

    # A SIGKILLed crash child is let go before it is reaped: the lab reads
    # its log and starts the repair child, which waits for it to be gone,
    # while the kernel tears it down.  Not on SQLite: reading a database
    # whose dying writer still holds its locks could be refused.
    let_go = act is _sigkill and store.backend == "jsonl"
    crash = crash_phase(
        case, reference, options, session=session, where=where, act=act, let_go=let_go
    )  # fmt: skip
    unsettled: list[tuple[str, Child]] = []
    after: int | None = None
    if crash.let_go is not None:
        unsettled.append(("crash", crash.let_go[0]))
        after = crash.let_go[1]
    if crash.failure is not None:
        _settle_quietly(unsettled, options.timeout)
        return result(*crash.failure)
    artifacts["trace"] = str(where / "trace.jsonl")

    try:
        crashed_bytes = store.take(session)
        observation = recover(
            case, reference, options, where=where, trace=crash.trace,
            crashed=store.parse(crashed_bytes, log_path), crashed_bytes=crashed_bytes,
            artifacts=artifacts, diverged=act is not _sigkill, unsettled=unsettled,
            after=after,
        )  # fmt: skip

        def judge(observation: Observation) -> list[Violation]:
            violations = check_case(observation)
            if checks is not None:
                violations += checks(observation, crash.status)
            return violations

        # Judged while the children let go are still exiting, then again in
        # the rare case that a real exit status is not the one reported.
        violations = judge(observation)
        settled = _settle(unsettled, options.timeout)
        real = replace(
            observation,
            repair_status=settled.get("repair_status", observation.repair_status),
            resume_status=settled.get("resume_status", observation.resume_status),
        )
        if real != observation:  # every other field is the same object: cheap
            violations = judge(real)
    except ChildHung as exc:
        return result(*hung(f"recovery of {case.id}: {exc}"))
    finally:
        if after is not None:
            os.close(after)
        _settle_quietly(unsettled, options.timeout)
    return result("fail" if violations else "pass", violations)


def _settle(unsettled: list[tuple[str, Child]], timeout: float) -> dict[str, ChildExit]:
    """The real exit status of each child let go early, by observation field.
    Raises ChildHung."""
    return {name: child.settle(timeout) for name, child in unsettled}


def _settle_quietly(unsettled: list[tuple[str, Child]], timeout: float) -> None:
    """After an error: reap every child let go early (bounded), whatever happens."""
    for _name, child in unsettled:
        with contextlib.suppress(ChildHung):
            child.settle(timeout)


def recover(
    case: Case, reference: Reference, options: LabOptions, *, where: Path,
    trace: tuple[Mapping[str, Any], ...], crashed: LogView, crashed_bytes: bytes,
    artifacts: dict[str, str], diverged: bool = False,
    unsettled: list[tuple[str, Child]] | None = None, after: int | None = None,
    make: ChildMaker = make_child,
) -> Observation:  # fmt: skip
    """The crashed session in `where/session` is what survived: let the target
    repair it (`--resume --repair-only`, skipped when no log survived: there
    is nothing to repair) and resume it, keeping each log state as an
    artifact.  Raises ChildHung.

    The repair and resume children are let go once they have closed every fd
    (a forked child reports that, see `Child.wait`), and the lab goes on while
    they exit.  Given `unsettled`, the observation holds their reported exit
    statuses and each is added there, (its observation field, the child), for
    the caller to settle; else they are settled, and their real statuses
    taken, before this returns.  Given `after` (a pidfd of the crash child,
    let go before it was reaped), the first child waits for it to be gone.
    `make` makes the two children (power loss records them: recoverypower.py)."""
    session = where / "session"
    _log, ledger_path = session_files(session)
    store = store_of(options, reference.scenario)
    log_path = store.log_path(session)
    artifacts["crashed"] = str(store.save(crashed_bytes, where, "crashed"))
    children: list[tuple[str, Child]] = []
    statuses = {"repair_status": ChildExit(0, "")}
    cut_files: tuple[tuple[str, bytes], ...] | None = None
    try:
        if store.exists(session):
            repair = make(options, case.scenario, session, "repair", "repair", after=after)
            after = None  # the resume child follows the repair child, not the crash child
            children.append(("repair_status", repair))
            statuses["repair_status"] = run_to_exit(repair, options.timeout, early=True)
            if store.backend == "jsonl":  # the cut files of docs/log-format.md 7.3
                cut_files = tuple(cut_files_of(session, store.log_name).items())
        repaired_bytes = store.take(session)
        artifacts["repaired"] = str(store.save(repaired_bytes, where, "repaired"))
        resume = make(options, case.scenario, session, "resume", "resume", after=after)
        children.append(("resume_status", resume))
        statuses["resume_status"] = run_to_exit(resume, options.timeout, early=True)
        final_bytes = store.take(session)
        artifacts["final"] = str(store.save(final_bytes, where, "final"))
        repaired = store.parse(repaired_bytes, log_path) if crashed_bytes else crashed
        final = store.parse(final_bytes, log_path)
        if unsettled is None:
            statuses.update(_settle(children, options.timeout))
    except BaseException:
        _settle_quietly(children, options.timeout)
        raise
    if unsettled is not None:
        unsettled += children
    return Observation(
        scenario=reference.scenario,
        case=case,
        reference_log=reference.log,
        reference_ledger=reference.ledger,
        trace=trace,
        crashed=crashed,
        repaired=repaired,
        repair_status=statuses["repair_status"],
        final=final,
        resume_status=statuses["resume_status"],
        final_ledger=read_ledger(ledger_path),
        diverged=diverged,
        crashed_bytes=crashed_bytes,
        cut_files=cut_files,
    )


