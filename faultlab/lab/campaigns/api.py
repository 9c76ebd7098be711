# The lab as a library: what the CLI, the pytest plugin and repro scripts
# call.  The engine's entry points (`explore`, `run_single`, `fuzz`) take a
# drive from `make_drive`; the keyword functions below are the same calls
# spelled for one kind of target each (as earlier releases had them), each a
# drive built from its keywords and handed to the engine.  Nothing here
# prints or exits.
from __future__ import annotations

import os
import shutil
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from faultlab.lab.campaigns import engine
from faultlab.lab.campaigns.engine import ExploreResult, PlanProgress, Progress, Shard
from faultlab.lab.campaigns.explore import load_scenarios
from faultlab.lab.campaigns.select import Selection
from faultlab.lab.campaigns.targets import (
    DRIVES,
    check_drive,
    make_target,
    parse_faults,
)
from faultlab.lab.drives import make_drive
from faultlab.lab.faults.double import DEFAULT_MAX_DOUBLE
from faultlab.lab.oracle.case import CaseResult
from faultlab.lab.process.reference import LabOptions, Reference, run_reference
from faultlab.lab.process.scratch import make_workdir
from faultlab.lab.process.target import Target, bundled_scenarios
from faultlab.probe import FAULTS
from faultlab.scenario import Scenario, load_scenario

__all__ = [
    "DRIVES",
    "SUPPORTED_FAULTS",
    "bundled_scenarios",
    "check_drive",
    "explore_agent",
    "explore_app",
    "explore_paths",
    "explore_scenarios",
    "fuzz_agent",
    "load_scenarios",
    "make_drive",
    "make_target",
    "parse_faults",
    "reference_run",
    "replay_drive",
    "run_agent_case",
    "run_app_single",
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
    scenario: str, *, policy: str | None = None,
    target: Sequence[str] | str | Target | None = None,
    timeout: float = 60.0, workdir: Path, spawn: str = "fork", backend: str | None = None,
) -> Reference:  # fmt: skip
    """Run `scenario` once without faults (its boundary occurrences, log, ledger)."""
    made = make_target(policy=policy, target=target, backend=backend)
    options = LabOptions(made, workdir, timeout, spawn)
    return run_reference(os.path.realpath(scenario), load_scenario(scenario), options)


def run_single(
    scenario: str, occurrence: str, *, fault: str = "sigkill", policy: str | None = None,
    target: Sequence[str] | str | Target | None = None, timeout: float = 60.0, workdir: Path,
    spawn: str = "fork", backend: str | None = None, drive: str = "classic",
    check_determinism: bool = False,
) -> CaseResult:  # fmt: skip
    """One classic or ACP case (`check_determinism`: run twice, classic only)."""
    made = make_drive(drive, workdir=workdir, timeout=timeout, policy=policy, target=target,
                      spawn=spawn, backend=backend,
                      check_determinism=check_determinism or None)  # fmt: skip
    return engine.run_single(made, scenario, occurrence, fault=fault)


def explore_paths(
    paths: Sequence[str | Path], **options: object
) -> ExploreResult:
    """Every case of every scenario in `paths` (`explore_scenarios`' options)."""
    return explore_scenarios(load_scenarios(paths), **options)  # type: ignore[arg-type]


def explore_scenarios(
    scenarios: Sequence[tuple[str, Scenario]], *, policy: str | None = None,
    target: Sequence[str] | str | Target | None = None, jobs: int = 1,
    shard: Shard | None = None,
    timeout: float = 60.0, workdir: Path, progress: Progress | None = None,
    spawn: str = "fork", faults: Sequence[str] = ("sigkill",), backend: str | None = None,
    drive: str = "classic", max_double: int = DEFAULT_MAX_DOUBLE,
    plan_progress: PlanProgress | None = None, select: Selection | None = None,
) -> ExploreResult:  # fmt: skip
    """Every classic or ACP case of `scenarios` already loaded."""
    made = make_drive(drive, workdir=workdir, timeout=timeout, policy=policy, target=target,
                      spawn=spawn, backend=backend, max_double=max_double)  # fmt: skip
    return engine.explore(made, scenarios, faults=faults, jobs=jobs, shard=shard,
                          progress=progress, select=select,
                          plan_progress=plan_progress)  # fmt: skip


def explore_agent(
    scenarios: Sequence[tuple[str, Scenario]], *, agent: str, jobs: int = 1,
    shard: Shard | None = None, timeout: float = 120.0, workdir: Path,
    progress: Progress | None = None, faults: Sequence[str] = ("sigkill",),
    delays_ms: Sequence[int] | None = None, repeats: int = 1,
    select: Selection | None = None,
) -> ExploreResult:  # fmt: skip
    """Every black-box case of `scenarios` for `agent` (a bundled adapter's
    name or an adapter file), killed after each of `delays_ms`, `repeats` times."""
    made = make_drive("agent", workdir=workdir, timeout=timeout, agent=agent,
                      delays=None if delays_ms is None else tuple(delays_ms),
                      repeats=repeats)  # fmt: skip
    return engine.explore(made, scenarios, faults=faults, jobs=jobs, shard=shard,
                          progress=progress, select=select)  # fmt: skip


def fuzz_agent(
    scenarios: Sequence[tuple[str, Scenario]], *, agent: str, examples: int, seed: int,
    jobs: int = 1, timeout: float = 120.0, workdir: Path, progress: Progress | None = None,
    faults: Sequence[str] = ("sigkill",), max_delay_ms: int = 1000,
) -> ExploreResult:  # fmt: skip
    """`examples` black-box cases per scenario at drawn kill points."""
    made = make_drive("agent", workdir=workdir, timeout=timeout, agent=agent)
    return engine.fuzz(made, scenarios, examples=examples, seed=seed, faults=faults, jobs=jobs,
                       max_delay_ms=max_delay_ms, progress=progress)  # fmt: skip


def run_agent_case(
    scenario: str, occurrence: str, *, agent: str, fault: str = "sigkill",
    timeout: float = 120.0, workdir: Path,
) -> CaseResult:  # fmt: skip
    """One black-box case: `occurrence` like `tool/applied#1@200ms`."""
    made = make_drive("agent", workdir=workdir, timeout=timeout, agent=agent)
    return engine.run_single(made, scenario, occurrence, fault=fault)


def explore_app(
    scenarios: Sequence[tuple[str, Scenario]], *, app: str, workdir: Path,
    durability: str = "", jobs: int = 1, shard: Shard | None = None,
    faults: Sequence[str] = ("sigkill",), timeout: float = 60.0,
    progress: Progress | None = None, spawn: str = "fork", select: Selection | None = None,
    styles: Sequence[str] | None = None,
) -> ExploreResult:  # fmt: skip
    """Every case of `app` on `scenarios` in one mode (empty: the framework's
    default), its children forked by the app's fork server or exec'd, with
    the resume `styles` (None: every one the framework offers)."""
    made = make_drive("app", workdir=workdir, timeout=timeout, app=app, spawn=spawn,
                      compare=(durability,) if durability else None,
                      styles=None if styles is None else tuple(styles))  # fmt: skip
    return engine.explore(made, scenarios, faults=faults, jobs=jobs, shard=shard,
                          progress=progress, select=select)  # fmt: skip


def run_app_single(
    scenario: str, occurrence: str, *, app: str, fault: str, workdir: Path,
    timeout: float = 60.0, spawn: str = "fork",
) -> CaseResult:  # fmt: skip
    """One app case, as `explore --app` recorded it (`fault` FAULT/STYLE/MODE)."""
    made = make_drive("app", workdir=workdir, timeout=timeout, app=app, spawn=spawn)
    return engine.run_single(made, scenario, occurrence, fault=fault)


def replay_drive(info: dict[str, object], *, spawn: str = "fork") -> tuple[str, dict[str, object]]:
    """The drive a report's `run.json` names and the options to build it
    again for one of its cases (reports written before `driveOptions` keep
    the target in `target`)."""
    from faultlab.lab.drives import drive_accepts

    name = str(info.get("drive") or "classic")
    accepts = drive_accepts(name)
    kept = info.get("driveOptions")
    options: dict[str, object] = dict(kept) if isinstance(kept, dict) else {}
    target = info.get("target")
    if not options and name in ("agent", "app") and isinstance(target, list) and target:
        options[name] = target[0]
    if not options and name in ("classic", "acp"):
        options = {"policy": info.get("policy"), "target": target,
                   "backend": info.get("backend")}  # fmt: skip
    options.pop("modes", None)  # one case runs in the mode its fault names
    options.pop("delays", None)  # one case's kill point names its delay
    options.pop("repeats", None)
    if "spawn" in accepts:
        options["spawn"] = spawn
    return name, {k: v for k, v in options.items() if k in accepts and v is not None}
