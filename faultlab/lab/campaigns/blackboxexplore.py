# Exploration and single cases of a black-box agent (`--agent NAME|FILE`):
# the same case order, sharding, worker pool, coverage check and
# interruption path as `explore`, with the black-box reference run and
# cases of faultlab/lab/blackbox/drive.py.
from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence
from pathlib import Path

from faultlab.lab.blackbox.drive import (
    BLACKBOX_FAULTS,
    BlackboxOptions,
    plan_blackbox_cases,
    run_blackbox_case,
    run_blackbox_reference,
)
from faultlab.lab.campaigns.explore import (
    COVERAGE,
    ExploreResult,
    Progress,
    Shard,
    coverage_result,
    parse_fault_list,
    reference_failed,
    run_exploration,
)
from faultlab.lab.errors import LabUsageError
from faultlab.lab.oracle.case import Case, CaseResult
from faultlab.lab.oracle.codes import Violation
from faultlab.lab.process.reference import Reference
from faultlab.lab.process.tree import close_all
from faultlab.lab.servers.points import KillPoint, parse_kill_point
from faultlab.scenario import Scenario, load_scenario

__all__ = [
    "draw_kill_points",
    "explore_blackbox",
    "fuzz_blackbox",
    "parse_blackbox_faults",
    "run_blackbox_or_coverage",
    "run_single_blackbox",
]


def parse_blackbox_faults(faults: Sequence[str]) -> tuple[str, ...]:
    """`all` is every black-box fault; any other name must be one."""
    return parse_fault_list(faults, supported=BLACKBOX_FAULTS, option="--agent")


def _coverage(case: Case, reference: Reference) -> CaseResult:
    """A black-box scenario's coverage check: the servers saw some boundary,
    and a tool call if the script makes one (an agent that never saw the MCP
    tools would pass every tool case vacuously).  The scenario's declared
    `boundaries` name probe boundaries, which a black box never reports."""
    bare = dataclasses.replace(reference.scenario, boundaries=())
    result = coverage_result(case, dataclasses.replace(reference, scenario=bare))
    calls = any(step.tool_calls for turn in bare.turns for step in turn.steps)
    if result.verdict != "pass" or not calls or "tool/received#1" in reference.occurrences:
        return result
    missing = Violation(
        "BOUNDARY_NOT_REACHED",
        f"{bare.name} calls tools, but the agent never called the MCP tool server in its "
        "fault-free run (does it see the tools? the adapter's MCP config, allowed tools)",
        {"boundary": "tool/received"},
    )
    return dataclasses.replace(result, verdict="fail", violations=(missing,))


def run_blackbox_or_coverage(
    case: Case, reference: Reference, options: BlackboxOptions
) -> CaseResult:
    """One planned case of an exploration (its coverage check, or a crash case)."""
    if case.occurrence == COVERAGE:
        return _coverage(case, reference)
    if reference.returncode != 0:
        return reference_failed(case, reference)
    return run_blackbox_case(case, reference, options)


def explore_blackbox(
    scenarios: Sequence[tuple[str, Scenario]], options: BlackboxOptions, *, jobs: int = 1,
    shard: Shard | None = None, faults: Sequence[str] = ("sigkill",),
    progress: Progress | None = None,
) -> ExploreResult:  # fmt: skip
    """Every black-box case of `scenarios` (or of shard `shard`)."""
    if jobs < 1:
        raise LabUsageError(f"jobs must be at least 1, not {jobs}")
    wanted = parse_blackbox_faults(faults)

    def plan(reference: Reference) -> list[Case]:
        coverage = Case(reference.scenario_path, COVERAGE, "reference")
        if reference.returncode != 0:
            return [coverage]
        return [coverage, *plan_blackbox_cases(reference, options, wanted)]

    return _run_planned(scenarios, options, plan, jobs=jobs, shard=shard, progress=progress)


def _run_planned(
    scenarios: Sequence[tuple[str, Scenario]], options: BlackboxOptions,
    plan: Callable[[Reference], list[Case]], *, jobs: int, shard: Shard | None,
    progress: Progress | None,
) -> ExploreResult:  # fmt: skip
    """The black-box cases `plan` makes of each scenario's fault-free run."""
    return run_exploration(
        scenarios, jobs=jobs, shard=shard, progress=progress, threads="faultlab-agent",
        reference=lambda path, scenario: run_blackbox_reference(path, scenario, options),
        plan=plan, run=lambda case, reference: run_blackbox_or_coverage(case, reference, options),
        kill=close_all,
    )  # fmt: skip


def draw_kill_points(
    occurrences: Sequence[str], *, count: int, seed: int, faults: Sequence[str],
    max_delay_ms: int,
) -> list[tuple[KillPoint, str]]:  # fmt: skip
    """`count` distinct (kill point, fault) pairs drawn by Hypothesis from the
    occurrences a fault-free run reached, with any delay from 0 to
    `max_delay_ms` (its draws favour the ends, 0 and the maximum, and small
    numbers), the same ones for the same seed."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as with_seed
    from hypothesis import strategies as st

    if count < 1 or max_delay_ms < 0 or not occurrences or not faults:
        raise LabUsageError("fuzzing an agent needs examples >= 1, a delay bound >= 0, "
                            "and a fault-free run that reached some boundary")  # fmt: skip
    drawn: dict[tuple[KillPoint, str], None] = {}
    point = st.builds(
        lambda occurrence, delay, fault: (
            KillPoint(occurrence.partition("#")[0], int(occurrence.partition("#")[2]), delay),
            fault,
        ),
        st.sampled_from(list(dict.fromkeys(occurrences))),
        st.integers(min_value=0, max_value=max_delay_ms),
        st.sampled_from(list(faults)),
    )  # fmt: skip

    @with_seed(seed)
    @settings(max_examples=count * 5, phases=[Phase.generate], database=None, deadline=None,
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(point)
    def collect(pair: tuple[KillPoint, str]) -> None:
        if len(drawn) < count:
            drawn[pair] = None

    collect()
    return list(drawn)


def fuzz_blackbox(
    scenarios: Sequence[tuple[str, Scenario]], options: BlackboxOptions, *, examples: int,
    seed: int, jobs: int = 1, faults: Sequence[str] = ("sigkill",), max_delay_ms: int = 1000,
    progress: Progress | None = None,
) -> ExploreResult:  # fmt: skip
    """`examples` black-box cases per scenario at kill points drawn by
    Hypothesis (any delay up to `max_delay_ms`, not only the explored ones).
    Not shrunk: an agent's outcome at a delay is a race with its own timers,
    so a failing case is replayed (`run --at`) rather than minimised."""
    if jobs < 1:
        raise LabUsageError(f"jobs must be at least 1, not {jobs}")
    wanted = parse_blackbox_faults(faults)

    def plan(reference: Reference) -> list[Case]:
        coverage = Case(reference.scenario_path, COVERAGE, "reference")
        if reference.returncode != 0 or not reference.occurrences:
            return [coverage]
        pairs = draw_kill_points(reference.occurrences, count=examples, seed=seed,
                                 faults=wanted, max_delay_ms=max_delay_ms)  # fmt: skip
        return [coverage, *(Case(reference.scenario_path, str(p), f) for p, f in pairs)]

    return _run_planned(scenarios, options, plan, jobs=jobs, shard=None, progress=progress)


def run_single_blackbox(
    scenario: str, occurrence: str, *, fault: str, options: BlackboxOptions
) -> CaseResult:
    """One black-box case: the fault-free run, then `occurrence` (like
    `tool/applied#1@200ms`) with `fault`."""
    if occurrence != COVERAGE:  # a recorded coverage case has fault "reference"
        parse_blackbox_faults([fault])
    path = os.path.realpath(scenario)
    text, _, repeat = occurrence.partition("~")
    point = None if occurrence == COVERAGE else parse_kill_point(text)
    if repeat and not repeat.isdigit():
        raise LabUsageError(f"{occurrence}: a repeat is ~N, like tool/applied#1@200ms~2")
    reference = run_blackbox_reference(path, load_scenario(scenario), options)
    if point is None:
        return run_blackbox_or_coverage(Case(path, COVERAGE, "reference"), reference, options)
    case = Case(path, f"{point}" + (f"~{repeat}" if repeat else ""), fault)
    if reference.returncode == 0 and point.occurrence not in reference.occurrences:
        reached = ", ".join(dict.fromkeys(reference.occurrences[:8]))
        raise LabUsageError(f"{Path(scenario).name}: the fault-free run of the agent never "
                            f"reaches {point.occurrence} (it reaches: {reached}, ...)")  # fmt: skip
    return run_blackbox_or_coverage(case, reference, options)
