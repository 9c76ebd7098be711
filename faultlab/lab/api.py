# The lab as a library: what the CLI and repro scripts call.  Each function
# validates its arguments and returns values; nothing here prints or exits.
from __future__ import annotations

import dataclasses
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from faultlab.lab.errors import LabUsageError
from faultlab.lab.explore import (
    COVERAGE,
    ExploreResult,
    Progress,
    Shard,
    explore,
    load_scenarios,
    plan_cases,
    run_one,
)
from faultlab.lab.model import Case, CaseResult
from faultlab.lab.runner import LabOptions, Reference, run_reference
from faultlab.lab.scratch import scratch_root
from faultlab.lab.stores import store_for
from faultlab.lab.target import Target, check_executable, command_target, reference_target
from faultlab.probe import FAULTS, parse_occurrence
from faultlab.scenario import POLICIES, Scenario, load_scenario

__all__ = [
    "DRIVES",
    "SUPPORTED_FAULTS",
    "bundled_scenarios",
    "check_drive",
    "explore_paths",
    "explore_scenarios",
    "load_scenarios",
    "make_target",
    "parse_faults",
    "reference_run",
    "run_single",
    "workdir",
]

SUPPORTED_FAULTS = FAULTS


def bundled_scenarios() -> Path:
    """The scenarios shipped with faultlab (in the package, or the source tree)."""
    package = Path(__file__).resolve().parent.parent
    for candidate in (package / "scenarios", package.parent / "scenarios"):
        if candidate.is_dir():
            return candidate
    raise LabUsageError("the bundled scenarios are missing from this installation")


def make_target(
    *, policy: str | None = None, target: Sequence[str] | str | None = None,
    backend: str | None = None,
) -> Target:  # fmt: skip
    if policy is not None and policy not in POLICIES:
        raise LabUsageError(f"unknown policy {policy!r} (policies: {', '.join(POLICIES)})")
    if backend is not None:
        store_for(backend)  # an unknown backend is a usage error
    if target is None:
        return reference_target(policy, backend)
    if isinstance(target, str):
        return command_target(target, policy, backend)
    if not target:
        raise LabUsageError("target: empty command")
    check_executable(target[0])
    return Target(tuple(target), policy, False, backend)


def _check_fault(fault: str) -> None:
    if fault not in FAULTS:
        raise LabUsageError(f"unknown fault {fault!r} (faults: {', '.join(FAULTS)})")


DRIVES = ("classic", "acp")


def _check_drive(drive: str) -> None:
    if drive not in DRIVES:
        raise LabUsageError(f"unknown drive {drive!r} (drives: {', '.join(DRIVES)})")


def check_drive(drive: str, *, backend: str | None = None) -> None:
    """A usage error unless `drive` is known and can run with `backend`."""
    _check_drive(drive)
    if drive == "acp":
        _check_acp_backend(backend)


def _check_acp_backend(backend: str | None) -> None:
    # The ACP agent keeps its sessions in JSONL (docs/acp.md): a backend
    # asked for with --drive acp would be silently ignored, so it is refused.
    if backend not in (None, "jsonl"):
        raise LabUsageError(f"--backend {backend} works with --drive classic only; "
                            "the ACP agent keeps its sessions in JSONL")  # fmt: skip


def parse_faults(text: str, *, drive: str = "classic") -> tuple[str, ...]:
    """`all`, or a comma-separated list of fault names."""
    _check_drive(drive)
    if drive == "acp":
        from faultlab.lab.acpdrive import ACP_FAULTS, parse_acp_faults

        if text.strip() == "all":
            return ACP_FAULTS
        return parse_acp_faults([n.strip() for n in text.split(",") if n.strip()] or [""])
    if text.strip() == "all":
        return FAULTS
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    if not names:
        raise LabUsageError("--faults: name at least one fault, or 'all'")
    for name in names:
        _check_fault(name)
    return names


@contextmanager
def workdir(keep: Path | None = None) -> Iterator[Path]:
    """Where children's sessions live during a run (a temp dir under
    `scratch_root()` unless `keep`)."""
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        yield keep
        return
    path = Path(tempfile.mkdtemp(prefix="faultlab-", dir=scratch_root()))
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
    return run_reference(str(Path(scenario).resolve()), load_scenario(scenario), options)


def run_single(
    scenario: str, occurrence: str, *, fault: str = "sigkill", policy: str | None = None,
    target: Sequence[str] | str | None = None, timeout: float = 60.0, workdir: Path,
    spawn: str = "fork", backend: str | None = None, drive: str = "classic",
    check_determinism: bool = False,
) -> CaseResult:  # fmt: skip
    """Run one case: the reference run, then `occurrence` killed with `fault`
    (`check_determinism`: then both again, adding NONDETERMINISTIC if they differ)."""
    _check_drive(drive)
    if drive == "acp":
        from faultlab.lab.acpexplore import acp_options, run_single_acp

        _check_acp_backend(backend)
        if check_determinism:
            raise LabUsageError("--check-determinism works with --drive classic only")
        acp = acp_options(
            workdir=workdir, timeout=timeout, policy=policy, target=target, spawn=spawn
        )
        return run_single_acp(scenario, occurrence, fault=fault, options=acp)
    if occurrence == COVERAGE:  # the scenario's coverage check: a reference run only
        occurrence, fault = COVERAGE, "reference"
    else:
        name, n = parse_occurrence(occurrence)
        occurrence = f"{name}#{n}"
        _check_fault(fault)
    reference = reference_run(
        scenario, policy=policy, target=target, timeout=timeout, workdir=workdir, spawn=spawn,
        backend=backend,
    )  # fmt: skip
    made = make_target(policy=policy, target=target, backend=backend)
    options = LabOptions(made, workdir, timeout, spawn)
    case = Case(reference.scenario_path, occurrence, fault)
    reason = store_for(reference.backend).unsupported.get(fault)
    if reason is not None:
        raise LabUsageError(
            f"fault {fault!r} is not supported on backend {reference.backend}: {reason}"
        )
    if reference.returncode == 0 and occurrence != COVERAGE:
        applicable = [c for c in plan_cases(reference, (fault,)) if c.fault == fault]
        if applicable and case not in applicable:
            where = ", ".join(c.occurrence for c in applicable[:8])
            more = ", ..." if len(applicable) > 8 else ""
            raise LabUsageError(
                f"fault {fault!r} does not apply at {occurrence} in {Path(scenario).name} "
                f"(it applies at: {where}{more})"
            )
    result = run_one(case, reference, options)
    if not check_determinism:
        return result
    from faultlab.lab.determinism import check_determinism as rerun_and_compare

    violation = rerun_and_compare(case, reference, result, options, workdir=workdir / "again")
    if violation is None:
        return result
    return dataclasses.replace(result, verdict="fail", violations=(*result.violations, violation))


def explore_paths(
    paths: Sequence[str | Path], *, policy: str | None = None,
    target: Sequence[str] | str | None = None, jobs: int = 1, shard: Shard | None = None,
    timeout: float = 60.0, workdir: Path, progress: Progress | None = None,
    spawn: str = "fork", faults: Sequence[str] = ("sigkill",), backend: str | None = None,
    drive: str = "classic",
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
    )


def explore_scenarios(
    scenarios: Sequence[tuple[str, Scenario]], *, policy: str | None = None,
    target: Sequence[str] | str | None = None, jobs: int = 1, shard: Shard | None = None,
    timeout: float = 60.0, workdir: Path, progress: Progress | None = None,
    spawn: str = "fork", faults: Sequence[str] = ("sigkill",), backend: str | None = None,
    drive: str = "classic",
) -> ExploreResult:  # fmt: skip
    """`explore_paths` for scenarios already loaded with `load_scenarios`.  `backend`
    overrides every scenario's persistence backend (None: each scenario's own)."""
    _check_drive(drive)
    if drive == "acp":
        from faultlab.lab.acpexplore import acp_options, explore_acp

        _check_acp_backend(backend)
        acp = acp_options(
            workdir=workdir, timeout=timeout, policy=policy, target=target, spawn=spawn
        )
        return explore_acp(scenarios, acp, jobs=jobs, shard=shard, faults=faults, progress=progress)
    for fault in faults:
        _check_fault(fault)
    if jobs < 1:
        raise LabUsageError(f"jobs must be at least 1, not {jobs}")
    if timeout <= 0:
        raise LabUsageError(f"timeout must be positive, not {timeout}")
    made = make_target(policy=policy, target=target, backend=backend)
    options = LabOptions(made, workdir, timeout, spawn)
    return explore(scenarios, options, jobs=jobs, shard=shard, progress=progress, faults=faults)
