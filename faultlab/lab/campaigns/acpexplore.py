# Exploration and single cases with the lab as an ACP client (`--drive acp`):
# the same case order, sharding, worker pool, coverage check and
# interruption path as `explore`, with the ACP reference run and cases of
# faultlab/lab/acp/drive.py.
from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from faultlab.lab.acp.child import kill_all_acp
from faultlab.lab.acp.doublecrash import plan_acp_double_cases, run_acp_double_case
from faultlab.lab.acp.drive import (
    AcpOptions,
    acp_target,
    parse_acp_faults,
    plan_acp_cases,
    run_acp_case,
    run_acp_reference,
)
from faultlab.lab.campaigns.explore import (
    COVERAGE,
    ExploreResult,
    Progress,
    Shard,
    coverage_result,
    reference_failed,
    run_exploration,
)
from faultlab.lab.campaigns.select import Selection
from faultlab.lab.errors import LabUsageError
from faultlab.lab.faults.double import DEFAULT_MAX_DOUBLE, DOUBLE_FAULT, PlanProgress, parse_pair
from faultlab.lab.oracle.case import Case, CaseResult
from faultlab.lab.process.reference import Reference
from faultlab.probe import parse_occurrence
from faultlab.scenario import POLICIES, Scenario, load_scenario

__all__ = ["acp_options", "explore_acp", "run_single_acp"]


def acp_options(
    *, workdir: Path, timeout: float = 60.0, policy: str | None = None,
    target: str | Sequence[str] | None = None, spawn: str = "fork",
) -> AcpOptions:  # fmt: skip
    if policy is not None and policy not in POLICIES:
        raise LabUsageError(f"unknown policy {policy!r} (policies: {', '.join(POLICIES)})")
    if timeout <= 0:
        raise LabUsageError(f"timeout must be positive, not {timeout}")
    return AcpOptions(
        acp_target(target), workdir, timeout, policy, reference=target is None, spawn=spawn
    )


def _run(case: Case, reference: Reference, options: AcpOptions) -> CaseResult:
    if case.occurrence == COVERAGE:
        return coverage_result(case, reference)
    if reference.returncode != 0:
        return reference_failed(case, reference)
    if case.fault == DOUBLE_FAULT:
        return run_acp_double_case(case, reference, options)
    return run_acp_case(case, reference, options)


def explore_acp(
    scenarios: Sequence[tuple[str, Scenario]], options: AcpOptions, *, jobs: int = 1,
    shard: Shard | None = None, faults: Sequence[str] = ("sigkill",),
    progress: Progress | None = None, max_double: int = DEFAULT_MAX_DOUBLE,
    plan_progress: PlanProgress | None = None, select: Selection | None = None,
) -> ExploreResult:  # fmt: skip
    """Every ACP case of `scenarios` (or of shard `shard`, or those `select`
    keeps); double-sigkill
    cases last, planned by running recoveries (`jobs` at a time)."""
    if jobs < 1:
        raise LabUsageError(f"jobs must be at least 1, not {jobs}")
    wanted = parse_acp_faults(faults)

    def plan(reference: Reference) -> list[Case]:
        coverage = Case(reference.scenario_path, COVERAGE, "reference")
        if reference.returncode != 0:
            return [coverage]
        cases = [coverage, *plan_acp_cases(reference, wanted)]
        if DOUBLE_FAULT in wanted:
            cases += plan_acp_double_cases(reference, options, max_cases=max_double, jobs=jobs,
                                           progress=plan_progress)  # fmt: skip
        return cases

    return run_exploration(
        scenarios, jobs=jobs, shard=shard, progress=progress, threads="faultlab-acp",
        reference=lambda path, scenario: run_acp_reference(path, scenario, options), plan=plan,
        run=lambda case, reference: _run(case, reference, options), kill=kill_all_acp,
        select=select,
    )  # fmt: skip


def run_single_acp(
    scenario: str, occurrence: str, *, fault: str, options: AcpOptions
) -> CaseResult:
    """One ACP case: the fault-free ACP run, then `occurrence` with `fault`."""
    parse_acp_faults([fault])
    path = os.path.realpath(scenario)
    reference = run_acp_reference(path, load_scenario(scenario), options)
    if occurrence == COVERAGE:
        return _run(Case(path, COVERAGE, "reference"), reference, options)
    if fault == DOUBLE_FAULT:
        case = Case(path, "+".join(parse_pair(occurrence)), fault)
        first = case.occurrence.partition("+")[0]
        if reference.returncode == 0 and first not in reference.occurrences:
            raise LabUsageError(f"{Path(scenario).name}: the fault-free run never reaches {first}")
        return _run(case, reference, options)
    name, n = parse_occurrence(occurrence)
    case = Case(path, f"{name}#{n}", fault)
    if reference.returncode == 0:
        applicable = plan_acp_cases(reference, [fault])
        if case not in applicable:
            where = ", ".join(c.occurrence for c in applicable[:8])
            raise LabUsageError(
                f"fault {fault!r} does not apply at {case.occurrence} in {Path(scenario).name} "
                f"with --drive acp (it applies at: {where}{', ...' if len(applicable) > 8 else ''})"
            )
    return _run(case, reference, options)
