# Exploration: every boundary occurrence of every scenario, as found by each
# scenario's reference run, killed with SIGKILL.  Owns the stable case order,
# sharding, the worker pool and the interruption path (no child outlives an
# interrupted exploration, and the cases it finished are handed back as an
# incomplete result: `Interrupted`).
from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from faultlab.lab.campaigns.select import Selection
from faultlab.lab.errors import LabUsageError
from faultlab.lab.faults.corruption import CORRUPT_FAULT, plan_corrupt_cases, run_corrupt_case
from faultlab.lab.faults.double import (
    DEFAULT_MAX_DOUBLE,
    DOUBLE_FAULT,
    PlanProgress,
    plan_double_cases,
    run_double_case,
)
from faultlab.lab.faults.live import plan_fault_cases, run_fault_case
from faultlab.lab.faults.sigkill import run_case
from faultlab.lab.oracle.case import Case, CaseResult
from faultlab.lab.oracle.checks import check_coverage
from faultlab.lab.oracle.codes import Violation
from faultlab.lab.process.reference import LabOptions, Reference, run_reference
from faultlab.lab.process.spawn import allow_children, kill_all, stop_children
from faultlab.lab.read.stores import store_for
from faultlab.probe import FAULTS, parse_occurrence
from faultlab.scenario import Scenario, ScenarioError, load_scenario
from faultlab.userfiles import UserFileError, check_exists, files_in

__all__ = [
    "COVERAGE",
    "ExploreResult",
    "FaultTally",
    "Interrupted",
    "Shard",
    "coverage_result",
    "explore",
    "fault_tally",
    "load_scenarios",
    "parse_fault_list",
    "parse_shard",
    "plan_cases",
    "plan_gaps",
    "reference_failed",
    "run_exploration",
    "run_one",
    "spread_order",
    "tidy_passed",
]

COVERAGE = "coverage"  # the occurrence name of a scenario's coverage check
Progress = Callable[[CaseResult, int, int], None]


@dataclass(frozen=True, slots=True)
class Shard:
    """Shard `index` (1-based) of `count`."""

    index: int
    count: int

    def take(self, cases: Sequence[Case]) -> list[Case]:
        return [case for i, case in enumerate(cases) if i % self.count == self.index - 1]

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(text: str) -> Shard:
    index, sep, count = text.partition("/")
    digits = [part for part in (index, count) if part.isascii() and part.isdigit()]
    if not sep or len(digits) != 2 or len(index) > 6 or len(count) > 6:
        raise LabUsageError(f"shard {text[:40]!r} must look like K/N (6 digits at most), e.g. 1/4")
    shard = Shard(int(index), int(count))
    if shard.count < 1 or not 1 <= shard.index <= shard.count:
        raise LabUsageError(f"shard {text!r}: K must be between 1 and N")
    return shard


@dataclass(frozen=True, slots=True)
class ExploreResult:
    """All case results of one exploration, in case order."""

    results: tuple[CaseResult, ...]
    references: tuple[Reference, ...]
    seconds: float
    shard: Shard | None = None
    stopped: bool = False  # stopped early by a Selection's maxfail (-x, --maxfail)
    # False: interrupted; `results` are the cases finished by then, of `planned`.
    complete: bool = True
    planned: int | None = None  # cases planned (None: as many as `results`)

    @property
    def passed(self) -> bool:
        """Some crash case passed and none failed.  Unsupported cases are listed,
        not failed; but a run whose faults were all unsupported, or that had only
        coverage checks (every fault it asked for applies nowhere), checked
        nothing and does not pass."""
        if any(r.failed for r in self.results):
            return False
        return any(r.passed and r.case.occurrence != COVERAGE for r in self.results)

    @property
    def unsupported(self) -> tuple[CaseResult, ...]:
        return tuple(r for r in self.results if r.verdict == "unsupported")

    @property
    def counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for result in self.results:
            counts[result.verdict] = counts.get(result.verdict, 0) + 1
        return counts

    @property
    def per_fault(self) -> dict[str, FaultTally]:
        """Crash cases per fault (coverage checks apart): how many ran, how many
        could not run on the backend.  A fault that ran none checked nothing."""
        return fault_tally(self.results)


class Interrupted(KeyboardInterrupt):
    """An exploration stopped by SIGINT or SIGTERM: `partial` holds the
    cases it finished (marked incomplete); every child was killed."""

    def __init__(self, partial: ExploreResult) -> None:
        super().__init__("interrupted")
        self.partial = partial


@dataclass(frozen=True, slots=True)
class FaultTally:
    """One fault's crash cases of a run: those that ran (any verdict but
    unsupported) and those the backend could not run."""

    ran: int = 0
    unsupported: int = 0

    def to_json(self) -> dict[str, int]:
        return {"ran": self.ran, "unsupported": self.unsupported}


def fault_tally(results: Sequence[CaseResult]) -> dict[str, FaultTally]:
    """`results`' crash cases per fault, in FAULTS order (unknown faults last)."""
    ran: dict[str, list[int]] = {}
    for result in results:
        if result.case.occurrence == COVERAGE or result.case.fault == "reference":
            continue
        tally = ran.setdefault(result.case.fault, [0, 0])
        tally[1 if result.verdict == "unsupported" else 0] += 1
    order = sorted(ran, key=lambda f: (FAULTS.index(f) if f in FAULTS else len(FAULTS), f))
    return {fault: FaultTally(*ran[fault]) for fault in order}


def load_scenarios(paths: Sequence[str | Path]) -> list[tuple[str, Scenario]]:
    """Load scenario files (directories are searched for *.toml), sorted and unique."""
    files: list[Path] = []
    for path in paths:
        given = Path(path)
        try:  # faultlab.userfiles refuses loops, FIFOs, devices and empty directories
            if check_exists(given, what="scenario file or directory", directory_ok=True):
                files.extend(files_in(given, suffix=".toml", what="scenario file"))
            else:
                files.append(given)
        except UserFileError as exc:
            raise ScenarioError(exc.path, "", exc.problem) from None
    unique = sorted({os.path.realpath(f): f for f in files}.items())
    names: dict[str, str] = {}
    for resolved, _shown in unique:
        other = names.setdefault(Path(resolved).name, resolved)
        if other != resolved:
            raise LabUsageError(
                f"{other} and {resolved} have the same file name; case ids "
                f"({Path(resolved).name}::...) would collide: rename one"
            )
    return [(resolved, load_scenario(shown)) for resolved, shown in unique]


OFFLINE_FAULTS = ("power-loss", "torn-write")


def plan_cases(
    reference: Reference, faults: Sequence[str] = ("sigkill",), *,
    options: LabOptions | None = None, max_double: int = DEFAULT_MAX_DOUBLE, jobs: int = 1,
    plan_progress: PlanProgress | None = None,
) -> list[Case]:  # fmt: skip
    """The coverage check, then for each fault (in FAULTS order) its cases in
    trace order: SIGKILL at every occurrence, the others where they apply.
    double-sigkill cases come last; planning them runs processes (`options`,
    `jobs` at a time; see faultlab/lab/faults/double.py)."""
    cases = [Case(reference.scenario_path, COVERAGE, "reference")]
    store = store_for(reference.backend)
    for fault in _planned_from_reference(faults):
        # A fault the backend cannot run: one case per scenario says so, with the reason.
        if store.unsupported_reason(fault, reference.ground_truth) is not None:
            cases.append(Case(reference.scenario_path, "flush/written#1", fault))
        elif fault == "sigkill":
            cases += [Case(reference.scenario_path, o, fault) for o in reference.occurrences]
        elif fault in OFFLINE_FAULTS:
            from faultlab.lab.faults.powerloss import plan_power_cases

            cases += plan_power_cases(reference, fault)
        elif fault == CORRUPT_FAULT:
            cases += plan_corrupt_cases(reference)
        else:
            cases += plan_fault_cases(reference, fault)
    if DOUBLE_FAULT in faults and reference.returncode == 0:
        if options is None:
            raise LabUsageError(f"{DOUBLE_FAULT} cases are planned by running the target: "
                                "plan_cases needs its options")  # fmt: skip
        cases += plan_double_cases(reference, options, max_cases=max_double, jobs=jobs,
                                   progress=plan_progress)  # fmt: skip
    return cases


def _planned_from_reference(faults: Sequence[str]) -> list[str]:
    """The faults of `faults` whose cases the reference run alone plans, in
    FAULTS order (double-sigkill is planned by running the recovery)."""
    return sorted(set(faults) - {DOUBLE_FAULT}, key=FAULTS.index)


def reference_failed(case: Case, reference: Reference) -> CaseResult:
    if reference.bad_reports:
        message = (f"the target's probe report broke the protocol: {reference.bad_reports[0]}"
                   " (docs/probe-protocol.md)")  # fmt: skip
        evidence = {"problems": list(reference.bad_reports)}
        return CaseResult(case, "error", (Violation("BAD_PROBE_REPORT", message, evidence),))
    if reference.hung:
        message = f"the fault-free run {reference.stderr}"
        return CaseResult(case, "hung", (Violation("CHILD_HUNG", message),))
    detail = reference.stderr.strip().splitlines()[-1:] or ["no output"]
    violation = Violation(
        "REFERENCE_FAILED",
        f"the fault-free run exited with status {reference.returncode}: {detail[0]}",
        {"status": reference.returncode},
    )
    return CaseResult(case, "error", (violation,))


def coverage_result(
    case: Case, reference: Reference, faults: Sequence[str] = ()
) -> CaseResult:
    """A scenario's coverage check: its reference run reported boundaries and
    reached the declared ones, and (given the run's `faults`) every fault got a
    case where it applies and every `[[expect]]` of those faults a case that
    checks it."""
    if reference.returncode != 0:
        return reference_failed(case, reference)
    violations = plan_gaps(reference, faults)
    if reference.occurrences:
        violations += check_coverage(reference.scenario, reference.occurrences)
    return CaseResult(case, "fail" if violations else "pass", tuple(violations))


def _calls_tools(scenario: Scenario) -> bool:
    return any(
        step.tool_calls or any(branch.tool_calls for branch in step.branches)
        for turn in scenario.turns
        for step in turn.steps
    )


def plan_gaps(reference: Reference, faults: Sequence[str]) -> list[Violation]:
    """Never green on nothing: what a run of `faults` would leave unchecked.
    A reference run that reported no boundary gives no kill point at all
    (NO_BOUNDARY_REPORTED); a fault that applies to the scenario but got no
    case (FAULT_NOT_PLANNED; cancel-in-checkpoint applies only where the
    script calls tools); an `[[expect]]` of one of `faults` that no case checks
    (EXPECTATION_NOT_CHECKED)."""
    name = reference.scenario.name
    if not reference.occurrences:
        return [Violation(
            "NO_BOUNDARY_REPORTED",
            f"the fault-free run of {name} exited cleanly but reported no boundary: "
            "there is no kill point to test (is the probe wired in?)",
            {"trace": len(reference.trace)},
        )]  # fmt: skip
    # double-sigkill is planned by running the recovery, which reports a
    # kill point it could not plan as a case of its own (faults/double.py).
    single = _planned_from_reference(faults)
    planned = plan_cases(reference, single)
    found = []
    with_cases = {c.fault for c in planned}
    for fault in single:
        applies = fault != "cancel-in-checkpoint" or _calls_tools(reference.scenario)
        if applies and fault not in with_cases:
            found.append(Violation(
                "FAULT_NOT_PLANNED",
                f"{fault} applies to {name} but the reference run gave it no case "
                "(none of the boundaries it is injected at was reported)",
                {"fault": fault},
            ))  # fmt: skip
    keys = {(c.occurrence, c.fault) for c in planned}
    for expect in reference.scenario.expectations:
        if expect.fault in faults and (expect.at, expect.fault) not in keys:
            found.append(Violation(
                "EXPECTATION_NOT_CHECKED",
                f"{name} expects something at {expect.at} under {expect.fault}, but no "
                f"{expect.fault} case runs there (the reference run never reached it)",
                {"at": expect.at, "fault": expect.fault},
            ))  # fmt: skip
    return found


def run_one(case: Case, reference: Reference, options: LabOptions) -> CaseResult:
    if case.occurrence == COVERAGE:
        return coverage_result(case, reference)
    if reference.returncode != 0:
        return reference_failed(case, reference)
    if case.fault == "sigkill":
        return run_case(case, reference, options)
    if case.fault == DOUBLE_FAULT:
        return run_double_case(case, reference, options)
    reason = store_for(reference.backend).unsupported_reason(
        case.fault, reference.ground_truth
    )
    if reason is not None:
        return CaseResult(case, "unsupported", (), 0.0, f"backend {reference.backend}: {reason}")
    if case.fault in OFFLINE_FAULTS:
        from faultlab.lab.faults.powerloss import run_power_case

        return run_power_case(case, reference, options)
    if case.fault == CORRUPT_FAULT:
        return run_corrupt_case(case, reference, options)
    return run_fault_case(case, reference, options)


def tidy_passed(result: CaseResult, workdir: Path) -> None:
    """Remove a passing case's directory (if it lies under `workdir`): only a
    failure's artifacts are reported, and a long exploration or fuzz campaign
    must not fill the scratch space (faultlab/lab/process/scratch.py) with thousands
    of passing cases."""
    where = result.artifacts.get("dir")
    if result.passed and where is not None and Path(where).is_relative_to(workdir):
        shutil.rmtree(where, ignore_errors=True)


def _run_and_tidy(case: Case, reference: Reference, options: LabOptions) -> CaseResult:
    result = run_one(case, reference, options)
    tidy_passed(result, options.workdir)
    return result


def explore(
    scenarios: Sequence[tuple[str, Scenario]],
    options: LabOptions,
    *,
    jobs: int = 1,
    shard: Shard | None = None,
    faults: Sequence[str] = ("sigkill",),
    only: str | None = None,
    progress: Progress | None = None,
    max_double: int = DEFAULT_MAX_DOUBLE,
    plan_progress: PlanProgress | None = None,
    select: Selection | None = None,
) -> ExploreResult:
    """Run every case of `scenarios` (or of shard `shard`, or those `select`
    keeps, stopping as it says); `only` keeps one
    occurrence; `max_double` bounds each scenario's double-sigkill cases
    (`plan_progress` is told how their planning goes)."""
    if jobs < 1:
        raise LabUsageError("jobs must be at least 1")
    options = options.for_jobs(jobs)

    def plan(reference: Reference) -> list[Case]:
        cases = plan_cases(reference, faults, options=options, max_double=max_double, jobs=jobs,
                           plan_progress=plan_progress)  # fmt: skip
        if only is None:
            return cases
        name, n = parse_occurrence(only)
        return [c for c in cases if c.occurrence == f"{name}#{n}"]

    def run(case: Case, reference: Reference) -> CaseResult:
        if case.occurrence == COVERAGE:
            return coverage_result(case, reference, faults)
        return _run_and_tidy(case, reference, options)

    return run_exploration(
        scenarios, jobs=jobs, shard=shard, progress=progress, threads="faultlab-case",
        reference=lambda path, scenario: run_reference(path, scenario, options), plan=plan,
        run=run, kill=kill_all, select=select,
    )  # fmt: skip


def spread_order(cases: Sequence[Case]) -> list[int]:
    """The order to start `cases` in (indices): each scenario's cases spread
    evenly over the whole run instead of one scenario after another.  Some
    scenarios' children mostly wait (scripted tool latencies of 30-60 ms);
    run back to back, the parallel jobs all wait at once and leave cores
    idle.  Mixed, a waiting case runs beside a busy one.  Results are still
    reported in case order."""
    by_scenario: dict[str, list[int]] = {}
    for index, case in enumerate(cases):
        by_scenario.setdefault(case.scenario, []).append(index)
    keyed = [
        ((position + 0.5) / len(indices), rank, index)
        for rank, indices in enumerate(by_scenario.values())
        for position, index in enumerate(indices)
    ]
    return [index for _key, _rank, index in sorted(keyed)]


def parse_fault_list(
    faults: Sequence[str], *, supported: Sequence[str], option: str
) -> tuple[str, ...]:
    """`all` is every one of `supported`; any other name must be one of them
    (`option` names the target kind in the error, like `--agent`)."""
    names = [n for name in faults for n in (supported if name == "all" else (name,))]
    for name in names:
        if name not in supported:
            raise LabUsageError(f"fault {name!r} is not supported with {option} "
                                f"(supported: {', '.join(supported)})")  # fmt: skip
    return tuple(f for f in supported if f in names)


def run_exploration(
    scenarios: Sequence[tuple[str, Scenario]], *, jobs: int, shard: Shard | None,
    progress: Progress | None, threads: str,
    reference: Callable[[str, Scenario], Reference], plan: Callable[[Reference], list[Case]],
    run: Callable[[Case, Reference], CaseResult], kill: Callable[[], None],
    select: Selection | None = None,
) -> ExploreResult:  # fmt: skip
    """The engine of every exploration (classic and ACP drives): the reference
    runs, then the planned cases (of shard `shard`, and of those the ones
    `select` keeps) `jobs` at a time, results in case order; interrupted or
    broken, `kill` leaves no child behind.  Once `select.maxfail` cases have
    failed, the cases not started are cancelled, those running finish, and
    the result holds the cases up to the last failure (`stopped`)."""
    started = time.monotonic()
    executor = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix=threads)
    references: list[Reference] = []
    cases: list[Case] = []
    futures: list[Future[CaseResult]] = []
    try:
        references = list(executor.map(lambda item: reference(*item), scenarios))
        by_path = {ref.scenario_path: ref for ref in references}
        cases = [case for ref in references for case in plan(ref)]
        if shard is not None:
            cases = shard.take(cases)
        if select is not None:
            cases = [cases[i] for i in select.take([case.id for case in cases])]
        maxfail = select.maxfail if select is not None else None
        stopped, failed = False, 0
        submitted = {
            index: executor.submit(run, cases[index], by_path[cases[index].scenario])
            # One job gains nothing from another order, and its progress
            # (reported in case order) then keeps up with the run.
            for index in (spread_order(cases) if jobs > 1 else range(len(cases)))
        }
        futures = [submitted[index] for index in range(len(cases))]
        results = []
        for done, future in enumerate(futures, start=1):
            result = future.result()
            results.append(result)
            if progress is not None:
                progress(result, done, len(futures))
            failed += 1 if result.failed else 0
            if maxfail is not None and failed >= maxfail and done < len(futures):
                stopped = True
                executor.shutdown(wait=True, cancel_futures=True)
                break
    except KeyboardInterrupt as stop:
        # Interrupted (Ctrl-C, SIGTERM): what finished before the signal is
        # kept; then no new child starts, every live one is killed, and the
        # workers are waited for (they end at once), so nothing writes into
        # the scratch space after this returns.
        finished = tuple(f.result() for f in futures if f.done() and _succeeded(f))
        executor.shutdown(wait=False, cancel_futures=True)
        stop_children()
        kill()
        try:
            executor.shutdown(wait=True)
        finally:
            allow_children()
        partial = ExploreResult(finished, tuple(references), time.monotonic() - started, shard,
                                complete=False, planned=len(cases))  # fmt: skip
        raise Interrupted(partial) from stop
    except BaseException:
        # Broken: no child may outlive us.
        executor.shutdown(wait=False, cancel_futures=True)
        kill()
        raise
    executor.shutdown(wait=True)
    return ExploreResult(tuple(results), tuple(references), time.monotonic() - started, shard,
                         stopped=stopped)  # fmt: skip


def _succeeded(future: Future[CaseResult]) -> bool:
    return not future.cancelled() and future.exception() is None
