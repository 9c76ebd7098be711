# Power loss and torn writes applied to the recovery itself (issue 30): in a
# power-loss or torn-write case, the repair child and the resumed child that
# recover the crash state are recorded (traced under strace when the
# scenario's ground truth is the system calls, as the fault-free run was),
# and every state a power loss during either of them would leave
# (recoverystates.py) is judged offline like a crash state of the run
# itself: the log reads cleanly and is a prefix of what the child left (G5),
# what the child reported durable or acted on is in it (G1, G2, G4, the
# repair's `repair/durable` included), and the bytes a load cut are never
# lost (G5, CUT_TAIL_LOST).  Under the system's ground truth the child's own
# file facts are also checked against its system calls (systruth.py).
from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from faultlab.lab.faults.powerstates import WRITTEN
from faultlab.lab.faults.recoverystates import RecoveryRun, RecoveryState, recovery_states
from faultlab.lab.faults.systruth import fact_disagreements
from faultlab.lab.oracle.case import Case
from faultlab.lab.oracle.checks import check_crash_durability, check_crash_integrity
from faultlab.lab.oracle.claims import repair_lost, tail_not_kept
from faultlab.lab.oracle.codes import Violation
from faultlab.lab.process.reference import (
    LabOptions,
    Reference,
    make_child,
    syscall_facts,
    traced_child,
)
from faultlab.lab.process.spawn import Child
from faultlab.lab.process.syscalls import strace_path
from faultlab.lab.process.target import Mode
from faultlab.lab.read.jsonl import parse_log
from faultlab.lab.read.view import LogView

__all__ = ["RecoveryRecorder", "check_recovery", "notes", "traces_recovery"]

# Reading back what a recovery child left: a session file larger than this
# is not a log the lab judges here (its bytes are not kept in memory).
_MAX_FILE = 64 << 20


def _files(session: Path) -> tuple[tuple[str, bytes], ...]:
    """The regular files of `session` (real path, bytes), bounded, links not
    followed (what a target wrote is untrusted)."""
    found = []
    try:
        entries = sorted(os.scandir(session), key=lambda e: e.name)
    except OSError:
        return ()
    for entry in entries:
        if not entry.is_file(follow_symlinks=False):
            continue
        try:
            if entry.stat(follow_symlinks=False).st_size > _MAX_FILE:
                continue
            fd = os.open(entry.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            with os.fdopen(fd, "rb") as handle:
                data = handle.read(_MAX_FILE + 1)
        except OSError:
            continue
        if len(data) <= _MAX_FILE:
            found.append((os.path.realpath(entry.path), data))
    return tuple(found)


@dataclass
class _Made:
    name: str
    child: Child
    session: Path
    start: tuple[tuple[str, bytes], ...]
    strace: Path | None


# The recovery children, by the names `recover` (faults/sigkill.py) gives them.
_CHILDREN = frozenset({"repair", "resume"})


def traces_recovery(
    case: Case, reference: Reference, options: LabOptions, *, torn: bool
) -> frozenset[str]:
    """Which of `case`'s recovery children run under strace (by name:
    "repair", "resume"); `torn`: the case keeps a torn prefix (torn-write,
    bound into its table entry, faults/table.py).  Only where the fault-free
    run's ground truth is the system calls; then both, in every case, where
    the children are exec'd anyway (a `--target`, `--spawn exec`: strace
    adds little).  The fork
    server's children strace cannot follow, and an exec'd copy under strace
    costs a fresh interpreter and its supervisor (about 2 s a child on a
    loaded machine, against about 0.1 s forked): there one recovery per
    scenario is traced, the torn-write case at its middle `flush/written`,
    and of it only the repair child, whose I/O (cut, keep, commit) is the
    recovery's own; the resumed child checkpoints with the run's code, which
    the fault-free run's trace vouches for (docs/decisions.md, issue 30).
    The others' states come from their own file facts, as every forked crash
    child's do."""
    if reference.ground_truth != "syscalls" or reference.trace_unsupported:
        return frozenset()
    if not (options.target.reference and options.spawn == "fork"):
        return _CHILDREN
    written = [o for o in reference.occurrences if o.partition("#")[0] == WRITTEN]
    middle = torn and bool(written) and case.occurrence == written[len(written) // 2]
    return frozenset({"repair"}) if middle else frozenset()


@dataclass
class RecoveryRecorder:
    """Makes a case's recovery children (`recover`'s `make`) and records them:
    each one named in `traced` exec'd under strace, the others as the run's
    own children (their file facts are then the truth).  `runs()` after they
    exited."""

    traced: frozenset[str]
    _made: list[_Made] = field(default_factory=list)

    def make(
        self, options: LabOptions, scenario: str, session: Path, mode: Mode, name: str,
        armed: str | None = None, after: int | None = None,
    ) -> Child:  # fmt: skip
        strace = strace_path() if name in self.traced else None
        start = _files(session)
        if strace is None:
            child = make_child(options, scenario, session, mode, name, armed=armed, after=after)
            self._made.append(_Made(name, child, session, start, None))
            return child
        output = session.parent / f"{name}.strace.txt"
        child = traced_child(options, scenario, session, mode, name, output=output,
                             strace=strace, armed=armed, after=after)  # fmt: skip
        self._made.append(_Made(name, child, session, start, output))
        return child

    def runs(self, log_name: str, statuses: Mapping[str, int]) -> list[RecoveryRun]:
        """Every child made so far, as a `RecoveryRun` (after they exited;
        `statuses`: each one's exit status by name)."""
        runs = []
        for index, made in enumerate(self._made):
            later = self._made[index + 1].start if index + 1 < len(self._made) else None
            final = later if later is not None else _files(made.session)
            log = os.path.realpath(made.session / log_name)
            status = statuses.get(made.name, -1)
            run = RecoveryRun(made.name, tuple(made.child.trace), made.start, final, log, status)
            runs.append(self._truth(run, made))
        return runs

    def _truth(self, run: RecoveryRun, made: _Made) -> RecoveryRun:
        if made.strace is None:
            why = "recorded from the target's own file facts (the run was not traced)"
            return replace(run, note=why)
        existing = {path: len(data) for path, data in made.start}
        facts, written, unsupported, note = syscall_facts(made.strace, made.session, made.child,
                                                          existing)  # fmt: skip
        if unsupported:
            calls = "; ".join(unsupported)
            note = f"its system calls did file I/O the lab cannot see into: {calls}"
        if note:
            return replace(run, note=note)
        return replace(run, ground_truth="syscalls", syscalls=facts, written=written)


def _view(files: dict[str, bytes], log: str) -> LogView:
    data = files.get(log)
    if data is None:
        return LogView(log, False, None, (), 0, 0, 0, ())
    return parse_log(data, log)


def _tail(run: RecoveryRun) -> tuple[bytes, int]:
    """The bytes a load of the run's log cuts (with their offset), if any."""
    start = dict(run.start).get(run.log)
    if not start:
        return b"", 0
    view = parse_log(start, run.log)
    if view.header is None or view.torn_bytes <= 0:
        return b"", 0
    return start[view.valid_size :], view.valid_size


def _state_violations(
    state: RecoveryState, run: RecoveryRun, final: LogView, tail: bytes, offset: int,
    views: dict[bytes | None, LogView],
) -> list[Violation]:  # fmt: skip
    data = state.files.get(run.log)
    view = views.get(data)
    if view is None:
        view = views[data] = _view(dict(state.files), run.log)
    found = check_crash_integrity(view, final)
    found += check_crash_durability(state.trace, view, final)
    found += repair_lost(state.trace, view.events)
    found += tail_not_kept(state.files, run.log, tail, offset)
    return found


def check_recovery(runs: Sequence[RecoveryRun]) -> list[Violation]:
    """Every violation a power loss during one of `runs` shows, each code said
    once per child (at the first state that shows it; its evidence counts
    the others: `states`), and,
    under the system's ground truth, the disagreements of each child's own
    file facts with its system calls."""
    found: dict[tuple[str, str], tuple[Violation, int]] = {}
    for run in runs:
        if run.status != 0:
            continue  # a failed recovery child is RESUME_FAILED already; its states are moot
        final = _view(dict(run.final), run.log)
        tail, offset = _tail(run)
        views: dict[bytes | None, LogView] = {}
        for state in recovery_states(run):
            for violation in _state_violations(state, run, final, tail, offset, views):
                _keep(found, violation, state.label, run)
        if run.ground_truth == "syscalls":
            seeded = [{"fact": "fsync", "file": p, "size": len(d), "after": -1}
                      for p, d in run.start]  # fmt: skip
            for _index, violation in fact_disagreements(run.trace, [*seeded, *run.syscalls]):
                _keep(found, violation, f"{run.name} child", run)
    return [_counted(violation, count) for violation, count in found.values()]


def _keep(
    found: dict[tuple[str, str], tuple[Violation, int]], violation: Violation, label: str,
    run: RecoveryRun,
) -> None:  # fmt: skip
    key = (violation.code, run.name)  # one line per code and child: the first state says it
    if key in found:
        kept, count = found[key]
        found[key] = (kept, count + 1)
        return
    evidence = {**violation.evidence, "state": label, "recovery": run.name,
                "groundTruth": run.ground_truth}  # fmt: skip
    tagged = Violation(violation.code, f"[{label}] {violation.message}", evidence)
    found[key] = (tagged, 1)


def _counted(violation: Violation, count: int) -> Violation:
    if count == 1:
        return violation
    return replace(violation, evidence={**violation.evidence, "states": count})


def notes(runs: Iterable[RecoveryRun]) -> str:
    """How each recovery child's states were derived, for the case's detail."""
    said = [f"{run.name}: {run.note}" for run in runs if run.note]
    return "; ".join(said)
