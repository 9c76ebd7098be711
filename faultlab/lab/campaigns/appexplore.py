# Exploration of a framework app (`--app langgraph:MODULE:FACTORY`,
# `--app pydantic-ai:...`): the same worker pool, case order and
# interruption path as `explore`, with the app drive of faultlab/lab/apps/;
# `--compare durability=...` (LangGraph) or `--compare save=...` (a
# pydantic-ai store's save policy) runs it once per mode and `app_matrix`
# puts the codes side by side.
from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from pathlib import Path

from faultlab.lab.apps.drive import (
    APP_FAULTS,
    MODES,
    RESUME_STYLES,
    AppOptions,
    parse_app,
    plan_app_cases,
    run_app_case,
    run_app_reference,
)
from faultlab.lab.apps.fork import close_forked
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
from faultlab.lab.process.reference import Reference
from faultlab.lab.process.tree import close_all
from faultlab.scenario import Scenario, load_scenario

__all__ = [
    "app_matrix",
    "combined_result",
    "explore_app",
    "parse_app_faults",
    "parse_compare",
    "run_app_single",
]


def parse_app_faults(faults: Sequence[str]) -> tuple[str, ...]:
    """`all` is every app fault; any other name must be one."""
    return parse_fault_list(faults, supported=APP_FAULTS, option="--app")


def parse_compare(text: str | None, *, framework: str = "langgraph") -> tuple[str, ...]:
    """`durability=exit,async,sync` (LangGraph) or `save=node,run`
    (pydantic-ai) -> the modes; None -> the framework's default mode."""
    name, known, default = MODES[framework]
    if text is None:
        return (default,)
    key, _, values = text.partition("=")
    modes = tuple(v.strip() for v in values.split(",") if v.strip())
    if key.strip() != name or not modes:
        raise LabUsageError(f"--compare {text}: a {framework} app compares {name}=MODE,... "
                            f"(modes: {', '.join(known)})")  # fmt: skip
    for mode in modes:
        if mode not in known:
            raise LabUsageError(f"--compare: unknown {name} {mode!r} "
                                f"(modes: {', '.join(known)})")  # fmt: skip
    return modes


def _run(case: Case, reference: Reference, options: AppOptions) -> CaseResult:
    if case.occurrence == COVERAGE:
        return coverage_result(case, dataclasses.replace(
            reference, scenario=dataclasses.replace(reference.scenario, boundaries=())))
    if reference.returncode != 0:
        return reference_failed(case, reference)
    return run_app_case(case, reference, options)


def explore_app(
    scenarios: Sequence[tuple[str, Scenario]], *, app: str, workdir: Path,
    durability: str = "", jobs: int = 1, shard: Shard | None = None,
    faults: Sequence[str] = ("sigkill",), styles: Sequence[str] = RESUME_STYLES,
    timeout: float = 60.0, progress: Progress | None = None, spawn: str = "fork",
) -> ExploreResult:  # fmt: skip
    """Every case of `app` on `scenarios` in one mode (empty: the
    framework's default); the children forked by the app's fork server, or
    exec'd (`spawn`)."""
    if jobs < 1:
        raise LabUsageError(f"jobs must be at least 1, not {jobs}")
    durability = durability or MODES[parse_app(app)[0]][2]
    options = AppOptions(app, workdir / durability, durability, tuple(styles), timeout,
                         spawn=spawn)  # fmt: skip
    wanted = parse_app_faults(faults)

    def plan(reference: Reference) -> list[Case]:
        coverage = Case(reference.scenario_path, COVERAGE, f"reference/{durability}")
        if reference.returncode != 0:
            return [coverage]
        return [coverage, *plan_app_cases(reference, options, wanted)]

    return run_exploration(
        scenarios, jobs=jobs, shard=shard, progress=progress, threads="faultlab-app",
        reference=lambda path, scenario: run_app_reference(path, scenario, options),
        plan=plan, run=lambda case, reference: _run(case, reference, options), kill=_kill_all,
    )  # fmt: skip


def _kill_all() -> None:
    """On interrupt: every app child, exec'd (under its supervisor) or forked."""
    close_all()
    close_forked()


def app_matrix(results: dict[str, ExploreResult]) -> list[str]:
    """One line per case (scenario, point, fault and resume style), one
    column per mode: its codes, `ok`, or its verdict."""
    modes = list(results)
    cells: dict[tuple[str, str, str], dict[str, str]] = {}
    for mode, result in results.items():
        for r in result.results:
            if r.case.occurrence == COVERAGE:
                continue
            fault, style, _ = r.case.fault.split("/")
            key = (Path(r.case.scenario).name, r.case.occurrence, f"{fault}/{style}")
            text = ",".join(r.codes) if r.verdict == "fail" else (
                "ok" if r.passed else r.verdict)  # fmt: skip
            cells.setdefault(key, {})[mode] = text
    # Occurrence numbers count per run: checkpoint/put#2 of `exit` is not the
    # same point as that of `sync`; the model and tool boundaries line up.
    width = max([len(f"{k[0]} {k[1]} [{k[2]}]") for k in cells] + [4])
    columns = {m: max([len(row.get(m, "-")) for row in cells.values()] + [len(m)])
               for m in modes}  # fmt: skip
    lines = [(f"{'case':{width}}  " + "  ".join(f"{m:{columns[m]}}" for m in modes)).rstrip()]
    for key, row in cells.items():
        name = f"{key[0]} {key[1]} [{key[2]}]"
        cells_text = "  ".join(f"{row.get(m, '-'):{columns[m]}}" for m in modes)
        lines.append(f"{name:{width}}  {cells_text}".rstrip())
    return lines


def run_app_single(
    scenario: str, occurrence: str, *, app: str, fault: str, workdir: Path,
    timeout: float = 60.0, spawn: str = "fork",
) -> CaseResult:  # fmt: skip
    """One app case, as `explore --app` recorded it: `fault` is the case's
    whole fault, FAULT/STYLE/DURABILITY (e.g. `sigkill/resume/sync`); the
    fault-free run first, for its ledger and its occurrences."""
    parts = fault.split("/")
    if len(parts) != 3:
        raise LabUsageError(f"app case fault {fault!r}: expected FAULT/STYLE/DURABILITY, "
                            "e.g. sigkill/resume/sync")  # fmt: skip
    name, style, durability = parts
    parse_app_faults([name])
    options = AppOptions(app, workdir / durability, durability, (style,), timeout, spawn=spawn)
    path = os.path.realpath(scenario)
    reference = run_app_reference(path, load_scenario(path), options)
    case = Case(path, occurrence, fault)
    if reference.returncode != 0:
        return reference_failed(case, reference)
    if occurrence not in reference.occurrences:
        raise LabUsageError(f"{occurrence}: the fault-free run of {app} never reached it "
                            f"(it reached {len(set(reference.occurrences))} occurrence(s))")
    return run_app_case(case, reference, options)


def combined_result(results: dict[str, ExploreResult]) -> ExploreResult:
    """The explorations of every durability mode as one (for one report:
    the case ids already say the mode)."""
    parts = list(results.values())
    return ExploreResult(
        results=tuple(r for part in parts for r in part.results),
        references=tuple(ref for part in parts for ref in part.references),
        seconds=sum(part.seconds for part in parts), shard=parts[0].shard if parts else None,
        stopped=any(part.stopped for part in parts),
        complete=all(part.complete for part in parts),
        planned=sum(len(p.results) if p.planned is None else p.planned for p in parts),
    )  # fmt: skip
