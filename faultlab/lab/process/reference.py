# The options every run of a target shares, how one child of a case is made
# (exec'd or forked), and the reference (fault-free) run of a scenario that
# every case is compared with: its boundary trace, log and world ledger, and
# whether a later run followed the same path (`drift`).
from __future__ import annotations

import contextlib
import os
import re
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import orjson

from faultlab.lab.errors import LabUsageError
from faultlab.lab.process.forkserver import shared_server
from faultlab.lab.process.probereport import ProbeReport
from faultlab.lab.process.records import LedgerRecord, ledger_record
from faultlab.lab.process.spawn import Child, ChildExit, ChildHung
from faultlab.lab.process.syscalls import (
    strace_path,
    strace_unusable,
    syscall_facts,
    traced_argv,
)
from faultlab.lab.process.target import Mode, Target, session_files
from faultlab.lab.process.tracecache import CachedRun, cache_and_key
from faultlab.lab.process.tracefork import CANNOT_ATTACH, Tracer, attach
from faultlab.lab.read.stores import LogStore, store_for
from faultlab.lab.read.view import LogView
from faultlab.probe import ENV_TRACED
from faultlab.scenario import Scenario
from faultlab.userfiles import read_target

__all__ = [
    "BAD_REPORT",
    "ENV_GROUND_TRUTH",
    "GROUND_TRUTHS",
    "NOT_TRACED",
    "LabOptions",
    "Reference",
    "make_child",
    "owed_expectations",
    "read_bytes",
    "read_ledger",
    "run_reference",
    "run_to_exit",
    "slug",
    "store_of",
    "syscall_facts",
    "traced_child",
    "usable_cpus",
    "write_trace",
]

# Where the reference run's file facts come from: "syscalls" (its system
# calls, recorded by strace), "facts" (what the target reports), "auto"
# (syscalls where strace is installed, else facts).
GROUND_TRUTHS = ("auto", "syscalls", "facts")
ENV_GROUND_TRUTH = "FAULTLAB_GROUND_TRUTH"
# The note of a reference run left untraced because no planned fault reads
# its system calls (LabOptions.trace).
NOT_TRACED = (
    "not traced: no planned fault is judged on system calls (power-loss and torn-write are)"
)
# The status of a fault-free run that broke the probe protocol: no exit
# status is 256, so every check that the run failed (status != 0) holds.
BAD_REPORT = 256


@dataclass(frozen=True, slots=True)
class LabOptions:
    """How cases are run."""

    target: Target
    workdir: Path
    timeout: float = 60.0
    # "fork": children of the reference runtime (and of a zoo variant's
    # script, `Target.script`) come from a fork server; "exec": a fresh
    # interpreter per child (the fidelity reference).  A --target command
    # is always exec'd.
    spawn: str = "fork"
    # With spawn "fork": how many children the fork server keeps forked ahead
    # of the requests (None: its default; 0: it forks when asked).
    fork_ahead: int | None = None
    # With spawn "fork": whether the children forked ahead warm up while they
    # wait, which pays only on a core that would otherwise idle (None: yes,
    # unless an exploration runs more cases at once than there are CPUs;
    # see `for_jobs`).
    fork_warm: bool | None = None
    # Where file facts come from (GROUND_TRUTHS): with "syscalls" the
    # reference run is traced by strace, once per scenario (forked with
    # strace attached, or exec'd under it).
    ground_truth: str = "auto"
    # Whether a planned fault is judged on the reference run's system calls
    # (power-loss, torn-write): under "auto", untraced when none is (issue
    # 34: a trace costs a traced child per scenario that nothing would read).
    trace: bool = True
    # Whether a traced reference run may be served from, and is kept in, the
    # cache of traced runs across runs (tracecache.py; FAULTLAB_TRACE_CACHE
    # names its folder or turns it off).  False: always traced anew (the
    # determinism check's second run).
    trace_cache: bool = True

    def __post_init__(self) -> None:
        if self.spawn not in ("fork", "exec"):
            raise LabUsageError(f"spawn must be 'fork' or 'exec', not {self.spawn!r}")
        if self.ground_truth not in GROUND_TRUTHS:
            raise LabUsageError(
                f"ground truth must be one of {', '.join(GROUND_TRUTHS)}, not {self.ground_truth!r}"
            )
        if self.fork_ahead is not None and (
            type(self.fork_ahead) is not int or self.fork_ahead < 0
        ):
            raise LabUsageError(f"fork_ahead must be an integer >= 0, not {self.fork_ahead!r}")
        if self.fork_warm is not None and type(self.fork_warm) is not bool:
            raise LabUsageError(f"fork_warm must be True, False or None, not {self.fork_warm!r}")

    def for_jobs(self, jobs: int) -> LabOptions:
        """These options for `jobs` cases at a time: unless `fork_warm` says,
        the children forked ahead warm up unless there are more jobs than
        CPUs.  The warm-up only moves work off a case's critical path onto
        a core that would otherwise idle; with more jobs than CPUs it
        competes with them (benchmarks/README.md has the measurements)."""
        if self.fork_warm is not None:
            return self
        return replace(self, fork_warm=jobs <= usable_cpus())


@dataclass(frozen=True, slots=True)
class Reference:
    """The fault-free run of a scenario: the baseline of every case."""

    scenario: Scenario
    scenario_path: str
    trace: tuple[ProbeReport, ...]
    log: LogView
    ledger: tuple[LedgerRecord, ...]
    returncode: int
    log_bytes: bytes  # the whole log file as the fault-free run left it
    stderr: str
    hung: bool = False
    backend: str = "jsonl"  # the persistence backend the run used
    # "syscalls": `syscalls` holds the file facts strace showed (each with
    # `after`, the number of trace messages before it); "facts": only the
    # target's own reports are known (`ground_truth_note` says why).
    ground_truth: str = "facts"
    syscalls: tuple[dict[str, Any], ...] = ()
    ground_truth_note: str = ""
    # The traced calls whose effect on a session file the file model cannot
    # know (filemodel.py); when any, `syscalls` is empty and every case that
    # needs the system's facts is TRACE_UNSUPPORTED, never judged.
    trace_unsupported: tuple[str, ...] = ()
    # The bytes of each traced write (a `write` fact's `w` indexes them).
    written: tuple[bytes, ...] = ()
    # Reports that broke the probe protocol (spawn.report_problem); then
    # `returncode` is BAD_REPORT and every case of the scenario is an error.
    bad_reports: tuple[str, ...] = ()
    # (code, message): a file the run wrote that the lab refused to read
    # (faultlab.userfiles: TARGET_FILE_REFUSED, TARGET_OUTPUT_TOO_LARGE);
    # then `returncode` is BAD_REPORT and every case of the scenario is an error.
    refused: tuple[str, str] | None = None
    # Served from the cache of traced runs (tracecache.py): an earlier run of
    # the same target code, scenario and options; nothing was run this time.
    trace_cached: bool = False

    @property
    def boundaries(self) -> list[ProbeReport]:
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


def read_ledger(path: Path) -> tuple[LedgerRecord, ...]:
    """World-ledger records; a torn or foreign line is skipped (it was never
    applied).  Read bounded (faultlab.userfiles): a ledger that is not a
    regular file or is too large is a `TargetFileError`."""
    data = read_target(path, what="world ledger")
    if data is None:
        return ()
    records = []
    for line in data.split(b"\n"):
        try:
            record = ledger_record(orjson.loads(line))
        except orjson.JSONDecodeError:
            continue
        if record is not None:
            records.append(record)
    return tuple(records)


def store_of(options: LabOptions, scenario: Scenario) -> LogStore:
    """The backend a case runs on: the run's --backend, else the scenario's."""
    return store_for(options.target.backend or scenario.backend)


def read_bytes(path: Path) -> bytes:
    """The file a target wrote (b"" when there is none), read bounded."""
    return read_target(path, what="file a target wrote") or b""


def run_to_exit(child: Child, timeout: float, *, early: bool = False) -> ChildExit:
    """Run `child` to its exit; with `early`, a forked child may be let go
    before it is reaped (see `Child.wait`): the caller settles it."""
    with child:
        parked = child.run_until_parked_or_exit(timeout)
        if parked is not None:  # nothing is armed, so only a confused target parks
            child.reply("continue")
            child.run_until_parked_or_exit(timeout)
        return child.wait(timeout, early=early)


def make_child(
    options: LabOptions, scenario: str, session: Path, mode: Mode, name: str,
    armed: str | None = None, after: int | None = None,
) -> Child:  # fmt: skip
    argv = options.target.argv(scenario, session, mode)
    stderr = session.parent / f"{name}.stderr"
    session.parent.mkdir(parents=True, exist_ok=True)
    script = options.target.script
    if script is not None and options.spawn == "fork":
        # A zoo variant's script, forked from the runtime's server (the
        # child runs the script, `Target.script`), in the lab's cwd as an
        # exec'd command runs in the user's; never let go before it is
        # reaped: a variant's writes need not all come from its parked thread.
        server = shared_server(ahead=options.fork_ahead, warm=options.fork_warm is not False)
        return Child(argv, stderr_path=stderr, armed=armed, cwd=os.getcwd(), server=server,
                     server_argv=argv[len(options.target.command) :], after=after,
                     script=script, let_go=False)  # fmt: skip
    if not options.target.reference:
        # the user's cwd, as typed
        return Child(argv, stderr_path=stderr, armed=armed, after=after)
    # The reference runtime runs in its case directory (scenario paths are
    # absolute), which also tells whose a process is when sweeping.
    cwd = str(session.parent)
    if options.spawn == "fork":
        tail = argv[len(options.target.command) :]
        server = shared_server(ahead=options.fork_ahead, warm=options.fork_warm is not False)
        return Child(argv, stderr_path=stderr, armed=armed, cwd=cwd, server=server,
                     server_argv=tail, after=after)  # fmt: skip
    return Child(argv, stderr_path=stderr, armed=armed, cwd=cwd, after=after)


def traced_child(
    options: LabOptions, scenario: str, session: Path, mode: Mode, name: str, *, output: Path,
    strace: str, armed: str | None = None, after: int | None = None,
) -> Child:  # fmt: skip
    """A child exec'd under strace (its system calls go to `output`), told to
    write each probe report at once (FAULTLAB_TRACED) so that the reports
    fall between the calls they came between."""
    session.parent.mkdir(parents=True, exist_ok=True)
    argv = options.target.argv(scenario, session, mode)
    cwd = str(session.parent) if options.target.reference else None
    return Child(traced_argv(argv, output, strace), stderr_path=session.parent / f"{name}.stderr",
                 env={ENV_TRACED: "1"}, cwd=cwd, wrapper=True, armed=armed,
                 after=after)  # fmt: skip


def _tracing(options: LabOptions) -> tuple[str | None, str]:
    """The strace to trace the reference run with, or None and why not.
    Under "auto" the environment's FAULTLAB_GROUND_TRUTH may choose (the
    command line's way to turn tracing off)."""
    chosen = options.ground_truth
    if chosen == "auto":
        chosen = os.environ.get(ENV_GROUND_TRUTH, "") or "auto"
        if chosen not in GROUND_TRUTHS:
            raise LabUsageError(
                f"{ENV_GROUND_TRUTH}={chosen!r}: expected one of {', '.join(GROUND_TRUTHS)}"
            )
    if chosen == "facts":
        return None, f"system-call tracing is turned off ({ENV_GROUND_TRUTH}=facts)"
    if chosen == "auto" and not options.trace:
        return None, NOT_TRACED
    strace = strace_path()
    if strace is None:
        if chosen == "syscalls":
            raise LabUsageError("ground truth 'syscalls' needs strace, which is not installed")
        return None, "strace is not installed: the target's own file facts are used"
    why = strace_unusable(strace)
    if why is not None:
        if chosen == "syscalls":
            raise LabUsageError(f"ground truth 'syscalls': {why}")
        return None, f"{why}: the target's own file facts are used"
    return strace, ""


def run_reference(scenario_path: str, scenario: Scenario, options: LabOptions) -> Reference:
    """Run the scenario once without faults and record its trace, log and ledger
    (and, under strace, its file system calls)."""
    where = options.workdir / "reference" / slug(Path(scenario_path).name)
    shutil.rmtree(where, ignore_errors=True)
    session = where / "session"
    strace, note = _tracing(options)
    store = store_of(options, scenario)
    cache, key = (cache_and_key(options.target, scenario_path, backend=store.backend,
                                spawn=options.spawn, strace=strace)
                  if options.trace_cache else (None, None))  # fmt: skip
    if cache is not None and key is not None:
        cached = cache.load(key, where, store.backend)
        served = _served(cached, scenario_path, scenario, options, session) if cached else None
        if served is not None:
            return served
    tracer: Tracer | None = None
    if strace is None:
        child = make_child(options, scenario_path, session, "run", "run")
    else:
        child, tracer = _traced_child(options, scenario_path, session, strace)
    hung = False
    try:
        status = run_to_exit(child, options.timeout)
    except ChildHung as exc:  # killed by _run_to_exit's context; reported, not raised
        hung = True
        status = ChildExit(-9, f"hung: {exc}")
    finally:
        incomplete = tracer.finish(options.timeout) if tracer is not None else ""
    syscalls: tuple[dict[str, Any], ...] = ()
    written: tuple[bytes, ...] = ()
    untraceable: tuple[str, ...] = ()
    if strace is not None:
        syscalls, written, untraceable, note = syscall_facts(where / "strace.txt", session, child)
        if incomplete and not note:
            syscalls, written, untraceable = (), (), ()
            note = f"{incomplete}: the target's own file facts are used"
    _log, ledger_path = session_files(session)
    log_path = store.log_path(session)
    log_bytes = store.take(session)
    reference = Reference(
        scenario=owed_expectations(scenario, options.target.policy),
        scenario_path=scenario_path,
        trace=tuple(child.trace),
        log=store.parse(log_bytes, log_path),
        log_bytes=log_bytes,
        ledger=read_ledger(ledger_path),
        returncode=BAD_REPORT if child.bad_reports else status.returncode,
        stderr=status.stderr,
        hung=hung,
        backend=store.backend,
        ground_truth="facts" if note else "syscalls",
        syscalls=syscalls,
        ground_truth_note=note,
        written=written,
        trace_unsupported=untraceable,
        bad_reports=tuple(child.bad_reports),
    )
    traced_clean = strace is not None and not note and not hung and not child.bad_reports
    if cache is not None and key is not None and traced_clean and reference.returncode == 0:
        cache.store(key, where, _cached_run(reference), store.backend)
    return reference


def _cached_run(reference: Reference) -> CachedRun:
    return CachedRun(reference.trace, reference.log_bytes, reference.ledger, reference.stderr,
                     reference.syscalls, reference.written,
                     reference.trace_unsupported)  # fmt: skip


def _served(
    run: CachedRun, scenario_path: str, scenario: Scenario, options: LabOptions, session: Path
) -> Reference | None:
    """The Reference an entry of the cache stands for; None if its log
    cannot be read (the entry is untrusted input: then traced anew)."""
    store = store_of(options, scenario)
    try:
        log = store.parse(run.log_bytes, store.log_path(session))
    except Exception:  # whatever a damaged entry makes the reader raise
        return None
    return Reference(
        scenario=owed_expectations(scenario, options.target.policy), scenario_path=scenario_path,
        trace=run.trace, log=log, ledger=run.ledger, returncode=0, log_bytes=run.log_bytes,
        stderr=run.stderr, backend=store.backend, ground_truth="syscalls", syscalls=run.syscalls,
        written=run.written, trace_unsupported=run.trace_unsupported, trace_cached=True,
    )  # fmt: skip


# Why strace could not attach to a forked child, once it could not: every
# later traced run of this process is exec'd under strace straight away.
_attach_refused: list[str] = []


def _traced_child(
    options: LabOptions, scenario_path: str, session: Path, strace: str
) -> tuple[Child, Tracer | None]:
    """The reference run's child, started under strace: forked from the fork
    server with strace attached (tracefork.py) where the run is forked and
    strace can attach, else exec'd under strace."""
    where = session.parent
    where.mkdir(parents=True, exist_ok=True)
    forkable = options.target.reference or options.target.script is not None
    if options.spawn == "fork" and forkable and not _attach_refused:
        forked = make_child(options, scenario_path, session, "run", "run")
        forked.env, forked.traced = {ENV_TRACED: "1"}, True
        forked.start()
        assert forked.process is not None
        tracer = attach(forked.process.pid, where / "strace.txt", strace)
        if isinstance(tracer, Tracer):
            return forked, tracer
        forked.kill()  # still waiting for its tracer: it ran nothing
        with contextlib.suppress(ChildHung):
            forked.wait(options.timeout)
        shutil.rmtree(session, ignore_errors=True)  # the exec'd run starts anew
        if tracer.startswith(CANNOT_ATTACH):  # strace's refusal, not this child's trouble
            _attach_refused.append(tracer)
    return traced_child(options, scenario_path, session, "run", "run",
                        output=where / "strace.txt", strace=strace), None  # fmt: skip


def owed_expectations(scenario: Scenario, policy: str | None) -> Scenario:
    """`scenario` with only the [[expect]] entries that hold under the run's
    policy (`policy`, the --policy override, else the scenario's own): an
    expectation states what a crash leaves behind, and that depends on when the
    runtime flushed.  The others are not checked, and not owed a case."""
    effective = policy or scenario.policy
    kept = tuple(
        e for e in scenario.expectations if effective in (e.policies or (scenario.policy,))
    )
    return scenario if kept == scenario.expectations else replace(scenario, expectations=kept)


def write_trace(path: Path, trace: Sequence[Mapping[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(orjson.dumps(m) + b"\n" for m in trace))
