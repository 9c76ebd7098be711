# The engine: one case pipeline for every drive (faultlab/lab/drives/).  It owns
# what no drive does on its own: the coverage case of each scenario, the
# verdict of every case of a scenario whose fault-free run failed, the stable
# case order and shards, -k/--lf/-x/--maxfail (`Selection`), progress, the
# worker pool, interruption (no child outlives an interrupted run, and the
# cases it finished come back as an incomplete result: `Interrupted`), the
# validation of jobs, and the three entry points `explore`, `run_single` and
# `fuzz`, each taking a drive from `faultlab.lab.drives.make_drive`.
from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path

from faultlab.lab.campaigns.select import Selection
from faultlab.lab.drives import COVERAGE, Drive, PlanContext, kill_everything
from faultlab.lab.drives.protocol import reference_failed
from faultlab.lab.drives.untrusted import guarded_reference, guarded_run
from faultlab.lab.errors import LabUsageError, check_jobs
from faultlab.lab.faults.table import CLASSIC_FAULTS
from faultlab.lab.oracle.case import Case, CaseResult
from faultlab.lab.process.reference import Reference
from faultlab.lab.process.spawn import allow_children, stop_children
from faultlab.scenario import Scenario, load_scenario

__all__ = [
    "DEFAULT_MAX_CASES",
    "ExploreResult",
    "FaultTally",
    "Interrupted",
    "Progress",
    "Shard",
    "check_jobs",
    "combined_result",
    "explore",
    "fault_tally",
    "fuzz",
    "parse_shard",
    "run_case",
    "run_drive",
    "run_exploration",
    "run_single",
    "spread_order",
    "tidy_passed",
]

Progress = Callable[[CaseResult, int, int], None]
PlanProgress = Callable[[str, int, int], None]
# The crash cases one scenario may plan (`--max-cases`, docs/cli.md "Limits"):
# a target that reports 300,000 boundaries must not plan 300,000 cases.
DEFAULT_MAX_CASES = 10_000


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
    known = list(CLASSIC_FAULTS)
    order = sorted(ran, key=lambda f: (known.index(f) if f in known else len(known), f))
    return {fault: FaultTally(*ran[fault]) for fault in order}




def tidy_passed(result: CaseResult, workdir: Path) -> None:
    """Remove a passing case's directory (if it lies under `workdir`): only a
    failure's artifacts are reported, and a long exploration or fuzz campaign
    must not fill the scratch space (faultlab/lab/process/scratch.py) with thousands
    of passing cases."""
    where = result.artifacts.get("dir")
    if result.passed and where is not None and Path(where).is_relative_to(workdir):
        shutil.rmtree(where, ignore_errors=True)




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




def run_exploration(
    scenarios: Sequence[tuple[str, Scenario]], *, jobs: int, shard: Shard | None,
    progress: Progress | None, threads: str,
    reference: Callable[[str, Scenario], Reference], plan: Callable[[Reference], list[Case]],
    run: Callable[[Case, Reference], CaseResult], kill: Callable[[], None],
    select: Selection | None = None,
) -> ExploreResult:  # fmt: skip
    """The worker pool of every exploration: the reference
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
            kept = set(select.take([case.id for case in cases]))
            # A failed fault-free run is said by its coverage case, whatever
            # -k or --lf keeps: otherwise the user hears only "no cases".
            cases = [case for i, case in enumerate(cases)
                     if i in kept or _says_reference_failed(case, by_path)]  # fmt: skip
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


def _says_reference_failed(case: Case, by_path: dict[str, Reference]) -> bool:
    return case.occurrence == COVERAGE and by_path[case.scenario].returncode != 0


def _succeeded(future: Future[CaseResult]) -> bool:
    return not future.cancelled() and future.exception() is None


def explore(
    drive: Drive, scenarios: Sequence[tuple[str, Scenario]], *,
    faults: Sequence[str] = ("sigkill",), jobs: int = 1, shard: Shard | None = None,
    progress: Progress | None = None, select: Selection | None = None,
    plan_progress: PlanProgress | None = None, max_cases: int = DEFAULT_MAX_CASES,
) -> ExploreResult:  # fmt: skip
    """Every case of `scenarios` with `faults` (names or `all`, as the drive
    takes them): of shard `shard`, those `select` keeps (stopping as it
    says), `jobs` at a time; a drive of several variants (an app's modes)
    runs each in turn and gives one result.  A scenario that plans more than
    `max_cases` crash cases is a usage error.  Interrupted, raises
    `Interrupted` holding every case finished."""
    check_jobs(jobs)
    if isinstance(max_cases, bool) or not isinstance(max_cases, int) or max_cases < 1:
        raise LabUsageError(f"max cases must be at least 1, not {max_cases!r}")
    drive = drive.for_jobs(jobs)
    wanted = drive.parse_faults(faults)
    drive = drive.for_faults(wanted)
    context = PlanContext(jobs, plan_progress)
    parts: list[ExploreResult] = []
    for variant in drive.variants():
        try:
            crash_cases = partial(_planned, variant, wanted, context, max_cases)
            part = run_drive(variant, scenarios, wanted, crash_cases, jobs=jobs, shard=shard,
                              progress=progress, select=select)  # fmt: skip
        except Interrupted as stop:
            raise Interrupted(combined_result([*parts, stop.partial])) from stop
        parts.append(part)
        if part.stopped:
            break
    return parts[0] if len(parts) == 1 else combined_result(parts)


def _planned(drive: Drive, faults: tuple[str, ...], context: PlanContext, max_cases: int,
             reference: Reference) -> list[Case]:  # fmt: skip
    cases = drive.plan(reference, faults, context)
    if len(cases) > max_cases:
        raise LabUsageError(
            f"{Path(reference.scenario_path).name}: {len(cases)} crash cases planned from "
            f"{len(reference.occurrences)} boundary occurrence(s), more than the {max_cases} a "
            "scenario may have: raise --max-cases, or ask for fewer --faults (--delays, "
            "--repeats)"
        )  # fmt: skip
    return cases


def run_drive(
    drive: Drive, scenarios: Sequence[tuple[str, Scenario]], faults: tuple[str, ...],
    crash_cases: Callable[[Reference], list[Case]], *, jobs: int, shard: Shard | None,
    progress: Progress | None, select: Selection | None = None, coverage: bool = True,
    reference: Callable[[str, Scenario], Reference] | None = None,
) -> ExploreResult:  # fmt: skip
    """The cases of `drive` on `scenarios`: each scenario's coverage case
    (unless not `coverage`), then `crash_cases` of its fault-free run (none
    when that run failed: its coverage case says why); a passing case's
    directory is removed.  `reference`: the fault-free runs (default: the
    drive's, run now)."""

    def plan(ran: Reference) -> list[Case]:
        checked = [Case(ran.scenario_path, COVERAGE, drive.coverage_fault)] if coverage else []
        if ran.returncode != 0:
            return checked
        return [*checked, *crash_cases(ran)]

    def run(case: Case, reference: Reference) -> CaseResult:
        if case.occurrence == COVERAGE:
            return drive.coverage(case, reference, faults)
        if reference.returncode != 0:
            return reference_failed(case, reference)
        result = guarded_run(drive.run, case, reference)  # a refused file: an error case
        tidy_passed(result, drive.workdir)
        return result

    return run_exploration(
        scenarios, jobs=jobs, shard=shard, progress=progress, threads=f"faultlab-{drive.name}",
        reference=reference or partial(guarded_reference, drive.reference), plan=plan, run=run,
        kill=lambda: kill_everything([drive]),
        select=select,
    )  # fmt: skip


def combined_result(parts: Sequence[ExploreResult]) -> ExploreResult:
    """Several explorations (an app's modes) as one: the case ids say the mode."""
    return ExploreResult(
        results=tuple(r for part in parts for r in part.results),
        references=tuple(ref for part in parts for ref in part.references),
        seconds=sum(part.seconds for part in parts), shard=parts[0].shard if parts else None,
        stopped=any(part.stopped for part in parts),
        complete=all(part.complete for part in parts),
        planned=sum(len(p.results) if p.planned is None else p.planned for p in parts),
    )  # fmt: skip


def run_single(drive: Drive, scenario: str | Path, occurrence: str, *,
               fault: str = "sigkill") -> CaseResult:  # fmt: skip
    """One case: the fault-free run, then `occurrence` (as the user writes it)
    with `fault`; the coverage case when `occurrence` is `coverage` (with a
    fault named, it also checks that the fault got cases where it applies).
    A case the drive's plan could never make is a usage error."""
    path = os.path.realpath(scenario)
    variant = drive.variant_for(fault)
    if occurrence == COVERAGE:
        named = () if fault.split("/")[0] == "reference" else variant.parse_faults([fault])
        variant = variant.for_faults(named)
        reference = guarded_reference(variant.reference, path, load_scenario(scenario))
        case = Case(path, COVERAGE, variant.coverage_fault)
        return variant.coverage(case, reference, named)
    variant = variant.for_faults(variant.parse_faults([fault]))
    case = Case(path, variant.parse_occurrence(occurrence, fault), variant.case_fault(fault))
    reference = guarded_reference(variant.reference, path, load_scenario(scenario))
    if reference.returncode != 0:
        return reference_failed(case, reference)
    variant.check_applies(case, reference)
    result = guarded_run(variant.run, case, reference)
    from faultlab.lab.drives.classic import ClassicDrive

    if not (isinstance(variant, ClassicDrive) and variant.check_determinism):
        return result
    from faultlab.lab.campaigns.determinism import check_determinism

    again = variant.workdir / "again"
    violation = check_determinism(case, reference, result, variant.options, workdir=again)
    if violation is None:
        return result
    return replace(result, verdict="fail", violations=(*result.violations, violation))


# The engine's one-case entry point as `faultlab.lab` exports it (there,
# `run_single` is the keyword form for classic and ACP targets).
run_case = run_single


def fuzz(
    drive: Drive, scenarios: Sequence[tuple[str, Scenario]], *, examples: int, seed: int,
    faults: Sequence[str] = ("sigkill",), jobs: int = 1, max_delay_ms: int = 1000,
    progress: Progress | None = None,
) -> ExploreResult:  # fmt: skip
    """`examples` cases per scenario at kill points Hypothesis draws from the
    fault-free run (any delay up to `max_delay_ms`), reproducible from `seed`.
    Not shrunk: a black-box agent's outcome at a delay is a race with its own
    timers, so a failing case is replayed rather than minimised.  The classic
    drive's fuzzer generates scenarios instead (`fuzz_campaign`)."""
    from faultlab.lab.campaigns.blackboxexplore import draw_kill_points

    if drive.name != "agent":
        raise LabUsageError(f"fuzzing drawn kill points applies to the agent drive, not "
                            f"{drive.name}; `faultlab fuzz` without --agent generates "
                            "scenarios for the classic drive")  # fmt: skip
    check_jobs(jobs)
    wanted = drive.parse_faults(faults)

    def drawn(reference: Reference) -> list[Case]:
        if not reference.occurrences:
            return []  # the coverage case says NO_BOUNDARY_REPORTED
        pairs = draw_kill_points(reference.occurrences, count=examples, seed=seed,
                                 faults=wanted, max_delay_ms=max_delay_ms)  # fmt: skip
        return [Case(reference.scenario_path, str(p), f) for p, f in pairs]

    return run_drive(drive, scenarios, wanted, drawn, jobs=jobs, shard=None, progress=progress)
