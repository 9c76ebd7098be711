# The lab as a library: what the CLI and repro scripts call.  Each function
# validates its arguments and returns values; nothing here prints or exits.
from __future__ import annotations

import dataclasses
import os
import shutil
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from faultlab.lab.campaigns.explore import (
    COVERAGE,
    ExploreResult,
    Progress,
    Shard,
    coverage_result,
    explore,
    load_scenarios,
    plan_cases,
    run_one,
)
from faultlab.lab.campaigns.select import Selection
from faultlab.lab.campaigns.targets import (
    DRIVES,
    check_acp_backend,
    check_drive,
    check_drive_name,
    check_fault,
    make_target,
    parse_faults,
)
from faultlab.lab.errors import LabUsageError
from faultlab.lab.faults.double import (
    DEFAULT_MAX_DOUBLE,
    DOUBLE_FAULT,
    PlanProgress,
    parse_pair,
)
from faultlab.lab.faults.live import check_fault_at
from faultlab.lab.oracle.case import Case, CaseResult
from faultlab.lab.process.reference import LabOptions, Reference, run_reference
from faultlab.lab.process.scratch import make_workdir
from faultlab.lab.process.target import (
    bundled_scenarios,
)
from faultlab.lab.read.stores import store_for
from faultlab.probe import FAULTS, parse_occurrence
from faultlab.scenario import Scenario, load_scenario

if TYPE_CHECKING:
    from faultlab.lab.blackbox.drive import BlackboxOptions

__all__ = [
    "DRIVES",
    "SUPPORTED_FAULTS",
    "bundled_scenarios",
    "check_drive",
    "explore_agent",
    "explore_paths",
    "explore_scenarios",
    "fuzz_agent",
    "load_scenarios",
    "make_target",
    "parse_faults",
    "reference_run",
    "run_agent_case",
    "run_single",
    "workdir",
]

SUPPORTED_FAULTS = FAULTS


@contextmanager
def workdir(keep: Path | None = None) -> Iterator[Path]:
    """Where children's sessions live during a run (a temp dir under
    `scratch_root()` unless `keep`)."""
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        yield keep
        return
    path = make_workdir()
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def reference_run(
    scenario: str, *, policy: str | None = None, target: Sequence[str] | str | None = None,
    timeout: float = 60.0, workdir: Path, spawn: str = "fork", backend: str | None = None,
) -> Reference:  # fmt: skip
    """Run `scenario` once without faults (its boundary occurrences, log, ledger)."""
    made = make_target(policy=policy, target=target, backend=backend)
    options = LabOptions(made, workdir, timeout, spawn)
    return run_reference(os.path.realpath(scenario), load_scenario(scenario), options)


def run_single(
    scenario: str, occurrence: str, *, fault: str = "sigkill", policy: str | None = None,
    target: Sequence[str] | str | None = None, timeout: float = 60.0, workdir: Path,
    spawn: str = "fork", backend: str | None = None, drive: str = "classic",
    check_determinism: bool = False,
) -> CaseResult:  # fmt: skip
    """Run one case: the reference run, then `occurrence` killed with `fault`
    (`check_determinism`: then both again, adding NONDETERMINISTIC if they differ)."""
    check_drive_name(drive)
    if drive == "acp":
        from faultlab.lab.campaigns.acpexplore import acp_options, run_single_acp

        check_acp_backend(backend)
        if check_determinism:
            raise LabUsageError("--check-determinism works with --drive classic only")
        acp = acp_options(
            workdir=workdir, timeout=timeout, policy=policy, target=target, spawn=spawn
        )
        return run_single_acp(scenario, occurrence, fault=fault, options=acp)
    # The scenario's coverage check: a reference run only, which also checks
    # that `fault` got cases where it applies (faultlab/lab/campaigns/explore.py).
    # ("reference": a recorded coverage case replayed, which checks no plan.)
    planned = () if fault == "reference" else (fault,)
    if occurrence == COVERAGE:
        if planned:
            check_fault(fault)
        occurrence, fault = COVERAGE, "reference"
    elif fault == DOUBLE_FAULT:
        occurrence = "+".join(parse_pair(occurrence))
    else:
        name, n = parse_occurrence(occurrence)
        occurrence = f"{name}#{n}"
        check_fault(fault)
        check_fault_at(fault, name)
    reference = reference_run(
        scenario, policy=policy, target=target, timeout=timeout, workdir=workdir, spawn=spawn,
        backend=backend,
    )  # fmt: skip
    made = make_target(policy=policy, target=target, backend=backend)
    options = LabOptions(made, workdir, timeout, spawn)
    case = Case(reference.scenario_path, occurrence, fault)
    reason = store_for(reference.backend).unsupported_reason(fault, reference.ground_truth)
    if reason is not None:
        raise LabUsageError(
            f"fault {fault!r} is not supported on backend {reference.backend}: {reason}"
        )
    if reference.returncode == 0 and fault == DOUBLE_FAULT:
        first = occurrence.partition("+")[0]
        if first not in reference.occurrences:
            raise LabUsageError(f"{Path(scenario).name}: the fault-free run never reaches {first}")
    elif reference.returncode == 0 and occurrence != COVERAGE:
        applicable = [c for c in plan_cases(reference, (fault,)) if c.fault == fault]
        if not applicable:
            raise LabUsageError(
                f"fault {fault!r} applies nowhere in {Path(scenario).name}: its fault-free "
                "run reaches none of the boundaries the fault is injected at"
            )
        if case not in applicable:
            where = ", ".join(c.occurrence for c in applicable[:8])
            more = ", ..." if len(applicable) > 8 else ""
            raise LabUsageError(
                f"fault {fault!r} does not apply at {occurrence} in {Path(scenario).name} "
                f"(it applies at: {where}{more})"
            )
    if occurrence == COVERAGE:
        result = coverage_result(case, reference, planned)
    else:
        result = run_one(case, reference, options)
    if not check_determinism:
        return result
    from faultlab.lab.campaigns.determinism import check_determinism as rerun_and_compare

    violation = rerun_and_compare(case, reference, result, options, workdir=workdir / "again")
    if violation is None:
        return result
    return dataclasses.replace(result, verdict="fail", violations=(*result.violations, violation))


def explore_paths(
    paths: Sequence[str | Path], *, policy: str | None = None,
    target: Sequence[str] | str | None = None, jobs: int = 1, shard: Shard | None = None,
    timeout: float = 60.0, workdir: Path, progress: Progress | None = None,
    spawn: str = "fork", faults: Sequence[str] = ("sigkill",), backend: str | None = None,
    drive: str = "classic", max_double: int = DEFAULT_MAX_DOUBLE,
    plan_progress: PlanProgress | None = None,
) -> ExploreResult:  # fmt: skip
    """Every case of every scenario in `paths`, for each of `faults`."""
    return explore_scenarios(
        load_scenarios(paths),
        policy=policy,
        target=target,
        jobs=jobs,
        shard=shard,
        timeout=timeout,
        workdir=workdir,
        progress=progress,
        spawn=spawn,
        faults=faults,
        backend=backend,
        drive=drive,
        max_double=max_double,
        plan_progress=plan_progress,
    )


def explore_scenarios(
    scenarios: Sequence[tuple[str, Scenario]], *, policy: str | None = None,
    target: Sequence[str] | str | None = None, jobs: int = 1, shard: Shard | None = None,
    timeout: float = 60.0, workdir: Path, progress: Progress | None = None,
    spawn: str = "fork", faults: Sequence[str] = ("sigkill",), backend: str | None = None,
    drive: str = "classic", max_double: int = DEFAULT_MAX_DOUBLE,
    plan_progress: PlanProgress | None = None, select: Selection | None = None,
) -> ExploreResult:  # fmt: skip
    """`explore_paths` for scenarios already loaded with `load_scenarios`.  `backend`
    overrides every scenario's persistence backend (None: each scenario's own);
    `plan_progress` is told how double-sigkill planning goes; `select` keeps
    some cases and may stop the run early (-k, --lf, -x, --maxfail)."""
    check_drive_name(drive)
    if drive == "acp":
        from faultlab.lab.campaigns.acpexplore import acp_options, explore_acp

        check_acp_backend(backend)
        acp = acp_options(
            workdir=workdir, timeout=timeout, policy=policy, target=target, spawn=spawn
        )
        return explore_acp(
            scenarios, acp, jobs=jobs, shard=shard, faults=faults, progress=progress,
            max_double=max_double, plan_progress=plan_progress, select=select,
        )  # fmt: skip
    for fault in faults:
        check_fault(fault)
    if jobs < 1:
        raise LabUsageError(f"jobs must be at least 1, not {jobs}")
    if timeout <= 0:
        raise LabUsageError(f"timeout must be positive, not {timeout}")
    made = make_target(policy=policy, target=target, backend=backend)
    options = LabOptions(made, workdir, timeout, spawn)
    if max_double < 0:
        raise LabUsageError(f"max double cases must be >= 0 (0: all), not {max_double}")
    return explore(scenarios, options, jobs=jobs, shard=shard, progress=progress, faults=faults,
                   max_double=max_double, plan_progress=plan_progress,
                   select=select)  # fmt: skip


def _agent_options(agent: str, *, workdir: Path, timeout: float,
                   delays_ms: Sequence[int] | None, repeats: int) -> BlackboxOptions:  # fmt: skip
    from faultlab.lab.agents.launch import agent_launcher
    from faultlab.lab.blackbox.drive import BlackboxOptions
    from faultlab.lab.servers.points import DEFAULT_DELAYS_MS

    delays = tuple(DEFAULT_DELAYS_MS if delays_ms is None else delays_ms)
    if not delays:
        raise LabUsageError("--delays: name at least one delay")
    return BlackboxOptions(agent_launcher(agent), workdir, timeout, delays, repeats)


def explore_agent(
    scenarios: Sequence[tuple[str, Scenario]], *, agent: str, jobs: int = 1,
    shard: Shard | None = None, timeout: float = 120.0, workdir: Path,
    progress: Progress | None = None, faults: Sequence[str] = ("sigkill",),
    delays_ms: Sequence[int] | None = None, repeats: int = 1,
) -> ExploreResult:  # fmt: skip
    """Every black-box case of `scenarios` for `agent` (a bundled adapter's
    name or an adapter file): each boundary occurrence faultlab's servers saw
    in the fault-free run, killed after each of `delays_ms`, `repeats` times."""
    from faultlab.lab.campaigns.blackboxexplore import explore_blackbox

    options = _agent_options(agent, workdir=workdir, timeout=timeout, delays_ms=delays_ms,
                             repeats=repeats)  # fmt: skip
    return explore_blackbox(scenarios, options, jobs=jobs, shard=shard, faults=faults,
                            progress=progress)  # fmt: skip


def fuzz_agent(
    scenarios: Sequence[tuple[str, Scenario]], *, agent: str, examples: int, seed: int,
    jobs: int = 1, timeout: float = 120.0, workdir: Path, progress: Progress | None = None,
    faults: Sequence[str] = ("sigkill",), max_delay_ms: int = 1000,
) -> ExploreResult:  # fmt: skip
    """`examples` black-box cases per scenario for `agent`, at kill points
    Hypothesis draws (any boundary occurrence of the fault-free run, any
    delay up to `max_delay_ms`), reproducible from `seed`."""
    from faultlab.lab.campaigns.blackboxexplore import fuzz_blackbox

    options = _agent_options(agent, workdir=workdir, timeout=timeout, delays_ms=None, repeats=1)
    return fuzz_blackbox(scenarios, options, examples=examples, seed=seed, jobs=jobs,
                         faults=faults, max_delay_ms=max_delay_ms, progress=progress)  # fmt: skip


def run_agent_case(
    scenario: str, occurrence: str, *, agent: str, fault: str = "sigkill",
    timeout: float = 120.0, workdir: Path,
) -> CaseResult:  # fmt: skip
    """One black-box case: `occurrence` like `tool/applied#1@200ms`."""
    from faultlab.lab.campaigns.blackboxexplore import run_single_blackbox

    options = _agent_options(agent, workdir=workdir, timeout=timeout, delays_ms=None, repeats=1)
    return run_single_blackbox(scenario, occurrence, fault=fault, options=options)
