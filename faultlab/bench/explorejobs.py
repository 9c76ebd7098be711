# Issue 4's `--jobs` figure: the wall and CPU time of one whole exploration
# with --jobs 1 vs --jobs 2, and for information the same with the fork server
# forking on request and with cold children, all sides interleaved by round.
# Measurement only, no verdict (`faultlab.bench.report` judges).
from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from faultlab import lab
from faultlab.bench.common import Say, median, quiet, side_by_side
from faultlab.lab.campaigns.explore import explore, load_scenarios
from faultlab.lab.process.forkserver import shared_servers
from faultlab.lab.process.reference import LabOptions, run_reference

__all__ = ["ExploreJobs", "explore_jobs"]

_REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True, slots=True)
class ExploreJobs:
    """Wall time of one whole exploration with --jobs 1 and --jobs 2, with the
    default fork server (children forked ahead) and, for information, with
    the server forking on request: forking ahead uses the second core for a
    single job, which takes part of what a second job would gain.  Also for
    information: --jobs 2 with children that do not warm up while they
    wait, as the lab's children do not with more jobs than CPUs
    (``cold_jobs2``)."""

    scenarios: tuple[str, ...]
    cases: int
    rounds: int
    jobs1_seconds: tuple[float, ...]
    jobs2_seconds: tuple[float, ...]
    on_request_jobs1_seconds: tuple[float, ...]
    on_request_jobs2_seconds: tuple[float, ...]
    cold_jobs2_seconds: tuple[float, ...]
    all_passed: bool
    jobs1_median: float
    jobs2_median: float
    speedup: float
    on_request_jobs1_median: float
    on_request_jobs2_median: float
    on_request_speedup: float
    cold_jobs2_median: float
    cold_vs_default_jobs2: float  # > 1: the default (warm-up on 2 cores) is faster
    # CPU seconds (the lab, the fork server and its children) per wall
    # second: how many of the 2 cores each side kept busy.  A single job
    # that already keeps 1.2 cores busy can gain at most 2/1.2 from a second.
    jobs1_cores: float
    jobs2_cores: float
    on_request_jobs1_cores: float
    on_request_jobs2_cores: float
    jobs1_cpu_ms_per_case: float
    jobs2_cpu_ms_per_case: float


def _explore_paths(quick: bool) -> list[Path]:
    if not quick:
        return [lab.bundled_scenarios()]
    tests = _REPO / "tests" / "scenarios"
    small = [tests / "tiny.toml", tests / "tiny-tool.toml"]
    if all(path.is_file() for path in small):
        return small
    return [lab.bundled_scenarios() / "payment.toml", lab.bundled_scenarios() / "chat.toml"]


def explore_jobs(quick: bool, *, say: Say = quiet) -> ExploreJobs:
    """`faultlab explore` of every bundled scenario (quick: two small ones),
    --jobs 1 vs --jobs 2; the same with the fork server forking on request."""
    paths = _explore_paths(quick)
    scenarios = load_scenarios(paths)
    rounds = 1 if quick else 3
    cases: set[int] = set()
    passed: list[bool] = []

    def one_round(
        jobs: int, ahead: int | None, warm: bool | None = None
    ) -> Callable[[], tuple[float, float]]:
        def run() -> tuple[float, float]:
            with lab.workdir() as work:
                options = LabOptions(lab.make_target(), work, 60.0, "fork", ahead, warm)
                cpu_before = _lab_cpu_seconds()
                started = time.perf_counter()
                result = explore(scenarios, options, jobs=jobs)
                seconds = time.perf_counter() - started
                cpu = _lab_cpu_seconds() - cpu_before
            cases.add(len(result.results))
            passed.append(result.passed)
            how = "forked ahead" if ahead is None else "forked on request"
            how += "" if warm is None else (", warm" if warm else ", cold")
            say(
                f"explore: {len(result.results)} case(s) with {jobs} job(s), {how}, "
                f"in {seconds:.1f}s, {cpu / seconds:.2f} cores busy"
            )
            return seconds, cpu

        return run

    first_path, first_scenario = scenarios[0]
    for ahead in (None, 0):  # start and warm up every fork server the runs use
        for warm in (True, False):
            with lab.workdir() as work:
                options = LabOptions(lab.make_target(), work, 60.0, "fork", ahead, warm)
                run_reference(first_path, first_scenario, options)
    sides = side_by_side(
        rounds,
        [
            one_round(1, None),
            one_round(2, None),
            one_round(1, 0),
            one_round(2, 0),
            one_round(2, None, warm=False),
        ],
    )
    jobs1, jobs2, request1, request2, cold2 = (
        [seconds for seconds, _cpu in side] for side in sides
    )
    cores = [median([cpu / seconds for seconds, cpu in side]) for side in sides]
    cpu_per_case = [median([cpu for _seconds, cpu in side]) / max(cases) * 1000 for side in sides]
    one, two = median(jobs1), median(jobs2)
    one_on_request, two_on_request = median(request1), median(request2)
    shown = [p.name for p in paths] if quick else [f"{p.name}/*.toml" for p in paths]
    return ExploreJobs(
        scenarios=tuple(shown),
        cases=max(cases),
        rounds=rounds,
        jobs1_seconds=tuple(jobs1),
        jobs2_seconds=tuple(jobs2),
        on_request_jobs1_seconds=tuple(request1),
        on_request_jobs2_seconds=tuple(request2),
        cold_jobs2_seconds=tuple(cold2),
        all_passed=all(passed),
        jobs1_median=one,
        jobs2_median=two,
        speedup=one / two,
        on_request_jobs1_median=one_on_request,
        on_request_jobs2_median=two_on_request,
        on_request_speedup=one_on_request / two_on_request,
        cold_jobs2_median=median(cold2),
        cold_vs_default_jobs2=median(cold2) / two,
        jobs1_cores=cores[0],
        jobs2_cores=cores[1],
        on_request_jobs1_cores=cores[2],
        on_request_jobs2_cores=cores[3],
        jobs1_cpu_ms_per_case=cpu_per_case[0],
        jobs2_cpu_ms_per_case=cpu_per_case[1],
    )


def _lab_cpu_seconds() -> float:
    """CPU time of this process and of its fork servers with every child
    they reaped: all the work of an exploration."""
    times = os.times()
    own = times.user + times.system + times.children_user + times.children_system
    return own + sum(server.cpu_seconds() for server in shared_servers())
