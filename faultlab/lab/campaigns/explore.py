# The classic drive's exploration as it was called before the engine
# (faultlab/lab/campaigns/engine.py): `explore(scenarios, options)` over a
# `LabOptions`, and the scenario loader every drive shares.  The case
# pipeline itself is the engine's; the classic drive's planning and running
# are faultlab/lab/drives/classic.py.
from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from faultlab.lab.campaigns.engine import (
    ExploreResult,
    FaultTally,
    Interrupted,
    PlanProgress,
    Progress,
    Shard,
    fault_tally,
    parse_shard,
    run_exploration,
    spread_order,
    tidy_passed,
)
from faultlab.lab.campaigns.engine import explore as explore_drive
from faultlab.lab.campaigns.select import Selection
from faultlab.lab.drives.classic import (
    ClassicDrive,
    plan_cases,
    plan_gaps,
    run_one,
)
from faultlab.lab.drives.classic import classic_coverage as coverage_result
from faultlab.lab.drives.protocol import COVERAGE, reference_failed
from faultlab.lab.errors import LabUsageError
from faultlab.lab.faults.double import DEFAULT_MAX_DOUBLE
from faultlab.lab.process.reference import LabOptions
from faultlab.scenario import Scenario, ScenarioError, load_scenario
from faultlab.userfiles import UserFileError, check_exists, files_in

__all__ = [
    "COVERAGE",
    "ExploreResult",
    "FaultTally",
    "Interrupted",
    "Progress",
    "Shard",
    "coverage_result",
    "explore",
    "fault_tally",
    "load_scenarios",
    "parse_shard",
    "plan_cases",
    "plan_gaps",
    "reference_failed",
    "run_exploration",
    "run_one",
    "spread_order",
    "tidy_passed",
]


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


def explore(
    scenarios: Sequence[tuple[str, Scenario]], options: LabOptions, *, jobs: int = 1,
    shard: Shard | None = None, faults: Sequence[str] = ("sigkill",),
    progress: Progress | None = None, max_double: int = DEFAULT_MAX_DOUBLE,
    plan_progress: PlanProgress | None = None, select: Selection | None = None,
) -> ExploreResult:  # fmt: skip
    """Every classic case of `scenarios` with `options` (the engine's
    `explore` with a `ClassicDrive`)."""
    return explore_drive(ClassicDrive(options, max_double), scenarios, faults=faults, jobs=jobs,
                         shard=shard, progress=progress, select=select,
                         plan_progress=plan_progress)  # fmt: skip
