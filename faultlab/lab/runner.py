# Runs one scenario on a target: the reference (fault-free) run that every
# case is compared with, and a SIGKILL case: arm the kill point, wait for the
# child to park there, kill its process group, then let the target repair the
# crashed session (`--repair-only`) and resume it to completion, and hand
# everything observed to the oracle.
from __future__ import annotations

import contextlib
import os
import re
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import orjson

from faultlab.lab.errors import LabUsageError
from faultlab.lab.forkserver import ForkServer, shared_server
from faultlab.lab.logread import LogView
from faultlab.lab.model import Case, CaseResult, Verdict, Violation
from faultlab.lab.oracle import Observation, check_case
from faultlab.lab.spawn import Child, ChildExit, ChildHung
from faultlab.lab.stores import LogStore, store_for
from faultlab.lab.target import Mode, Target, session_files
from faultlab.scenario import Scenario

__all__ = ["LabOptions", "Reference", "run_case", "run_reference", "store_of", "usable_cpus"]

# Facts that differ between two runs of the same scenario (paths, byte
# counts that depend on timestamps) and do not describe the state reached.
_VOLATILE = frozenset({"file", "size", "offset", "bytes", "parked", "keptIn", "dir"})


@dataclass(frozen=True, slots=True)
class LabOptions:
    """How cases are run."""

    target: Target
    workdir: Path
    timeout: float = 60.0
    # "fork": children of the reference runtime come from a fork server;
    # "exec": a fresh interpreter per child (the fidelity reference).  A
    # --target command is always exec'd.
    spawn: str = "fork"
    # With spawn "fork": how many children the fork server keeps forked ahead
    # of the requests (None: its default; 0: it forks when asked).
    fork_ahead: int | None = None
    # With spawn "fork": whether the children forked ahead warm up while they
    # wait, which pays only on a core that would otherwise idle (None: yes,
    # unless an exploration runs more cases at once than there are CPUs;
    # see `for_jobs`).
    fork_warm: bool | None = None

    def __post_init__(self) -> None:
        if self.spawn not in ("fork", "exec"):
            raise LabUsageError(f"spawn must be 'fork' or 'exec', not {self.spawn!r}")
        if self.fork_ahead is not None and (
            type(self.fork_ahead) is not int or self.fork_ahead < 0
        ):
            raise LabUsageError(f"fork_ahead must be an integer >= 0, not {self.fork_ahead!r}")
        if self.fork_warm is not None and type(self.fork_warm) is not bool:
            raise LabUsageError(f"fork_warm must be True, False or None, not {self.fork_warm!r}")

    def for_jobs(self, jobs: int) -> LabOptions:
        """These options for `jobs` cases at a time: unless `fork_warm` says,
        the children forked ahead warm up unless there are more jobs than
        CPUs.  Measured on 2 cores, warm vs cold: --jobs 2 took the same
        time (its cases leave a core idle while they wait on scripted
        latencies) for 5% more CPU; --jobs 4 took 14% more time."""
        if self.fork_warm is not None:
            return self
        return replace(self, fork_warm=jobs <= usable_cpus())


@dataclass(frozen=True, slots=True)
class Reference:
    """The fault-free run of a scenario: the baseline of every case."""

    scenario: Scenario
    scenario_path: str
    trace: tuple[dict[str, Any], ...]
    log: LogView
    ledger: tuple[dict[str, Any], ...]
    returncode: int
    log_bytes: bytes  # the whole log file as the fault-free run left it
    stderr: str
    hung: bool = False
    backend: str = "jsonl"  # the persistence backend the run used

    @property
    def boundaries(self) -> list[dict[str, Any]]:
        return [m for m in self.trace if "boundary" in m]

    @property
    def occurrences(self) -> list[str]:
        return [f"{m['boundary']}#{m['n']}" for m in self.boundaries]


def usable_cpus() -> int:
    """How many CPUs this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_")


def read_ledger(path: Path) -> tuple[dict[str, Any], ...]:
    """World-ledger records; a torn or foreign line is skipped (it was never applied)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return ()
    records = []
    for line in data.split(b"\n"):
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(record, dict):
            records.append(record)
    return tuple(records)


def store_of(options: LabOptions, scenario: Scenario) -> LogStore:
    """The backend a case runs on: the run's --backend, else the scenario's."""
    return store_for(options.target.backend or scenario.backend)


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return b""


def _run_to_exit(child: Child, timeout: float, *, early: bool = False) -> ChildExit:
    """Run `child` to its exit; with `early`, a forked child may be let go
    before it is reaped (see `Child.wait`): the caller settles it."""
    with child:
        parked = child.run_until_parked_or_exit(timeout)
        if parked is not None:  # nothing is armed, so only a confused target parks
            child.reply("continue")
            child.run_until_parked_or_exit(timeout)
        return child.wait(timeout, early=early)


def _child(
    options: LabOptions, scenario: str, session: Path, mode: Mode, name: str,
    armed: str | None = None, after: int | None = None,
) -> Child:  # fmt: skip
    argv = options.target.argv(scenario, session, mode)
    stderr = session.parent / f"{name}.stderr"
    session.parent.mkdir(parents=True, exist_ok=True)
    if not options.target.reference:
        # the user's cwd, as typed
        return Child(argv, stderr_path=stderr, armed=armed, after=after)
    # The reference runtime runs in its case directory (scenario paths are
    # absolute), which also tells whose a process is when sweeping.
    cwd = str(session.parent)
    if options.spawn == "fork":
        tail = argv[len(options.target.command) :]
        server = shared_server(
            ForkServer, ahead=options.fork_ahead, warm=options.fork_warm is not False
        )
        return Child(argv, stderr_path=stderr, armed=armed, cwd=cwd, server=server,
                     server_argv=tail, after=after)  # fmt: skip
    return Child(argv, stderr_path=stderr, armed=armed, cwd=cwd, after=after)


def run_reference(scenario_path: str, scenario: Scenario, options: LabOptions) -> Reference:
    """Run the scenario once without faults and record its trace, log and ledger."""
    where = options.workdir / "reference" / slug(Path(scenario_path).name)
    shutil.rmtree(where, ignore_errors=True)
    session = where / "session"
    child = _child(options, scenario_path, session, "run", "run")
    hung = False
    try:
        status = _run_to_exit(child, options.timeout)
    except ChildHung as exc:  # killed by _run_to_exit's context; reported, not raised
        hung = True
        status = ChildExit(-9, f"hung: {exc}")
    _log, ledger_path = session_files(session)
    store = store_of(options, scenario)
    log_path = store.log_path(session)
    log_bytes = store.take(session)
    return Reference(
        scenario=scenario,
        scenario_path=scenario_path,
        trace=tuple(child.trace),
        log=store.parse(log_bytes, log_path),
        log_bytes=log_bytes,
        ledger=read_ledger(ledger_path),
        returncode=status.returncode,
        stderr=status.stderr,
        hung=hung,
        backend=store.backend,
    )


def normalized(message: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in message.items() if k not in _VOLATILE}


def _drift(trace: list[dict[str, Any]], reference: Reference) -> str | None:
    expected = reference.boundaries
    reached = [m for m in trace if "boundary" in m]
    for index, message in enumerate(reached):
        if index >= len(expected):
            return f"boundary {index + 1} ({message['boundary']}) is past the reference's end"
        if normalized(message) != normalized(expected[index]):
            return (
                f"boundary {index + 1} differs from the reference: "
                f"{normalized(message)} vs {normalized(expected[index])}"
            )
    return None


# While the child is parked at the kill point: inject the fault (send a signal,
# answer the probe).  Returns False to let the child go on running to its own
# exit instead of being SIGKILLed.
Act = Callable[[Child], bool]
# Fault-specific checks on what was observed (and how the crash child ended).
ExtraChecks = Callable[[Observation, ChildExit | None], list[Violation]]


def _sigkill(_child: Child) -> bool:
    return True


@dataclass(frozen=True, slots=True)
class CrashPhase:
    """How the crash child of a case went: its probe trace (also written to
    `where/trace.jsonl`), the exit status when the fault let it run on, and
    the case's verdict already when it hung or drifted from the reference."""

    trace: tuple[dict[str, Any], ...]
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
    crash = _child(options, case.scenario, session, "run", "crash", armed=case.occurrence)
    status: ChildExit | None = None
    failure: tuple[Verdict, list[Violation], str] | None = None
    gone: tuple[Child, int] | None = None
    with crash:
        try:
            parked = crash.run_until_parked_or_exit(options.timeout)
            drift = _drift(crash.trace, reference)
            if parked is None:
                exited = crash.wait(options.timeout)
                drift = f"exited with status {exited.returncode} without reaching {case.occurrence}"
            elif act(crash):
                pidfd = crash.kill_and_let_go() if let_go and drift is None else None
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
                except ChildHung as hung:
                    crash.kill()
                    failure = ("hung", [Violation("CHILD_HUNG", f"after the fault: {hung}")], "")
            if failure is None and drift is not None:
                failure = ("drift", [Violation("DRIFT", drift)], drift)
        except ChildHung as hung:
            crash.kill()
            failure = ("hung", [Violation("CHILD_HUNG", f"{case.occurrence}: {hung}")], "")
    _write_trace(where / "trace.jsonl", crash.trace)
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
    except ChildHung as hung:
        return result("hung", [Violation("CHILD_HUNG", f"recovery of {case.id}: {hung}")])
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
    trace: tuple[dict[str, Any], ...], crashed: LogView, crashed_bytes: bytes,
    artifacts: dict[str, str], diverged: bool = False,
    unsettled: list[tuple[str, Child]] | None = None, after: int | None = None,
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
    let go before it was reaped), the first child waits for it to be gone."""
    session = where / "session"
    _log, ledger_path = session_files(session)
    store = store_of(options, reference.scenario)
    log_path = store.log_path(session)
    artifacts["crashed"] = str(store.save(crashed_bytes, where, "crashed"))
    children: list[tuple[str, Child]] = []
    statuses = {"repair_status": ChildExit(0, "")}
    try:
        if store.exists(session):
            repair = _child(options, case.scenario, session, "repair", "repair", after=after)
            after = None  # the resume child follows the repair child, not the crash child
            children.append(("repair_status", repair))
            statuses["repair_status"] = _run_to_exit(repair, options.timeout, early=True)
        repaired_bytes = store.take(session)
        artifacts["repaired"] = str(store.save(repaired_bytes, where, "repaired"))
        resume = _child(options, case.scenario, session, "resume", "resume", after=after)
        children.append(("resume_status", resume))
        statuses["resume_status"] = _run_to_exit(resume, options.timeout, early=True)
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
    )


def _write_trace(path: Path, trace: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(orjson.dumps(m) + b"\n" for m in trace))
