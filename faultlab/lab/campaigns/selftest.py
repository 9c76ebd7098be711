# `faultlab selftest`: prove the oracle.  Every variant of the zoo registry
# (faultlab/lab/campaigns/zoo.py) is explored with its faults on its scenarios
# and must be caught with each code it expects; the reference runtime must pass
# every bundled scenario under every fault (zero false alarms; the full run
# adds double-sigkill, see `reference_faults`).  Owns the
# stages; the rows and the verdict of each (detected, missed, wrong-code;
# clean, false-alarm) are faultlab/lab/campaigns/selftestjudge.py, the table
# and the report faultlab/lab/report/selftest.py.
# `--quick` runs only each variant's
# documented catching cases (and the reference runtime on the same cases).
#
# A fuzz stage plugs in through `fuzz_campaign()`: a build whose
# `faultlab.lab.campaigns.fuzz` module defines
#     selftest_campaign(*, target, examples, timeout, workdir, jobs, policies)
#         -> Sequence[CaseResult]
# (target None: the reference runtime) gets its results judged like an
# exploration's, for the variants whose registry entry has `fuzz` and for the
# reference runtime's false-alarm campaign.  Without it those rows say
# "not-available": they are not counted as caught, missed or clean.
from __future__ import annotations

import dataclasses
import importlib
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import TypeVar

from faultlab.lab.campaigns import api
from faultlab.lab.campaigns.select import Selection
from faultlab.lab.campaigns.selftestforeign import foreign_row
from faultlab.lab.campaigns.selftestjudge import (
    REFERENCE,
    SelftestInterrupted,
    SelftestResult,
    SelftestRow,
    Stage,
    _ran,
    judge_reference,
    judge_variant,
)
from faultlab.lab.campaigns.zoo import QuickCase, Zoo, ZooVariant
from faultlab.lab.errors import LabUsageError, check_jobs, check_timeout
from faultlab.lab.faults.double import DEFAULT_MAX_DOUBLE, DOUBLE_FAULT
from faultlab.lab.oracle.case import CaseResult
from faultlab.lab.oracle.codes import FULL_POLICIES, POLICY_GAPS
from faultlab.lab.process.spawn import allow_children, kill_all, stop_children
from faultlab.lab.process.target import Target, script_target
from faultlab.scenario import POLICIES

__all__ = [
    "REFERENCE",
    "SelftestInterrupted",
    "SelftestResult",
    "SelftestRow",
    "fuzz_campaign",
    "judge_reference",
    "judge_variant",
    "reference_faults",
    "run_selftest",
]

FuzzCampaign = Callable[..., Sequence[CaseResult]]
RowProgress = Callable[["SelftestRow"], None]
T = TypeVar("T")


def fuzz_campaign() -> FuzzCampaign | None:
    """The fuzz stage of this build (`faultlab.lab.campaigns.fuzz.selftest_campaign`), or None."""
    try:
        module = importlib.import_module("faultlab.lab.campaigns.fuzz")
    except ModuleNotFoundError as exc:
        if exc.name in ("faultlab.lab.campaigns.fuzz", "hypothesis"):
            return None
        raise
    campaign = getattr(module, "selftest_campaign", None)
    return campaign if callable(campaign) else None


def _not_available(name: str, expected: Sequence[str], examples: int) -> SelftestRow:
    note = (
        f"fuzz campaign of {examples} example(s) not run: this build has no "
        "faultlab.lab.campaigns.fuzz.selftest_campaign"
    )
    return SelftestRow(name, "fuzz", tuple(expected), "not-available", None, 0, 0, {}, 0.0, note)


def _fuzz_row(
    name: str, expected: Sequence[str], scenarios: Sequence[Path], target: Sequence[str] | None,
    examples: int, timeout: float, workdir: Path, jobs: int,
    policies: Sequence[str] = ("semantic",), shrink: bool = True,
) -> SelftestRow:  # fmt: skip
    campaign = fuzz_campaign()
    if campaign is None:
        return _not_available(name, expected, examples)
    started = time.monotonic()
    # Hypothesis generates its own scenarios: `scenarios` only labels the row.
    del scenarios
    results = campaign(target=target, examples=examples, timeout=timeout, workdir=workdir,
                       jobs=jobs, policies=tuple(policies), shrink=shrink)  # fmt: skip
    seconds = time.monotonic() - started
    if name == REFERENCE:
        return judge_reference(results, stage="fuzz", seconds=seconds)
    return judge_variant(name, expected, results, stage="fuzz", seconds=seconds)


def _target(variant: ZooVariant) -> list[str]:
    return [sys.executable, str(variant.script)]


def _run_target(variant: ZooVariant) -> Target:
    """What a classic or ACP variant's cases run: its script, forked from
    the runtime's (or the ACP agent's) fork server under --spawn fork
    (docs/fork-server.md, "Scripts")."""
    return script_target(variant.script)


# A black-box variant or the reference agent is explored at delay 0 only:
# the servers hold at each boundary, the one delay whose outcome does not
# race the agent's own timers (the delays are for real agents).
_AGENT_DELAYS = (0,)


def variant_adapter(variant: ZooVariant, workdir: Path) -> str:
    """An adapter file for a black-box variant: the bundled `reference`
    adapter with the variant's script in place of the reference agent."""
    from faultlab.lab.agents.adapter import find_adapter

    reference = Path(find_adapter("reference").source).read_text(encoding="utf-8")
    module = '"-P", "-m", "faultlab.runtime.httpagent"'
    if module not in reference:
        raise LabUsageError(f"the reference adapter no longer runs {module}")
    name = variant.name.replace("_", "-")
    text = reference.replace(module, f'"{variant.script}"').replace(
        'name = "reference"', f'name = "{name}"'
    )
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / f"{name}.toml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def _explore_variant(
    variant: ZooVariant, jobs: int, workdir: Path, spawn: str, exhaustive: bool = False
) -> SelftestRow:  # fmt: skip
    """The explore row: the variant's documented catching cases first (issue
    34), the whole exploration only when they do not catch it with every
    expected code, or when `exhaustive`."""
    started = time.monotonic()
    if not exhaustive:
        documented = _quick_variant(variant, workdir / "documented", spawn)
        if documented.status == "detected":
            note = (f"caught at its documented catching case(s) ({documented.cases} run); "
                    "--exhaustive explores every case")  # fmt: skip
            return dataclasses.replace(documented, stage="explore", note=note,
                                       seconds=time.monotonic() - started)  # fmt: skip
    row = _explore_all(variant, jobs, workdir / "all", spawn)
    row = dataclasses.replace(row, seconds=time.monotonic() - started)
    if exhaustive:
        return row
    why = "its documented cases did not catch it with every expected code: explored in full"
    return dataclasses.replace(row, note=f"{why}; {row.note}" if row.note else why)


def _explore_all(variant: ZooVariant, jobs: int, workdir: Path, spawn: str) -> SelftestRow:
    if variant.drive == "agent":
        explored = api.explore_agent(
            api.load_scenarios(variant.scenarios), agent=variant_adapter(variant, workdir),
            jobs=jobs, timeout=variant.timeout, workdir=workdir, faults=variant.faults,
            delays_ms=_AGENT_DELAYS,
        )  # fmt: skip
        return judge_variant(variant.name, variant.expect, explored.results, stage="explore")
    result = api.explore_scenarios(
        api.load_scenarios(variant.scenarios), target=_run_target(variant), jobs=jobs,
        timeout=variant.timeout, workdir=workdir, faults=variant.faults,
        backend=variant.backend, drive=variant.drive, spawn=spawn,
    )  # fmt: skip
    return judge_variant(variant.name, variant.expect, result.results, stage="explore")


def _quick_case(
    case: QuickCase, target: Sequence[str] | Target | None, timeout: float, workdir: Path,
    spawn: str, backend: str | None = None, drive: str = "classic", policy: str | None = None,
) -> CaseResult:  # fmt: skip
    if drive == "agent":  # target: an adapter file (None: the reference agent)
        agent = target[0] if target and not isinstance(target, Target) else "reference"
        return api.run_agent_case(str(case.scenario), case.at, agent=agent, fault=case.fault,
                                  timeout=timeout, workdir=workdir)  # fmt: skip
    return api.run_single(str(case.scenario), case.at, fault=case.fault, target=target,
                          timeout=timeout, workdir=workdir, spawn=spawn, backend=backend,
                          drive=drive, check_determinism=case.check_determinism,
                          policy=policy)  # fmt: skip


def _quick_variant(variant: ZooVariant, workdir: Path, spawn: str) -> SelftestRow:
    started = time.monotonic()
    target = (
        [variant_adapter(variant, workdir)] if variant.drive == "agent" else _run_target(variant)
    )
    results = [
        _quick_case(
            case,
            target,
            variant.timeout,
            workdir / str(i),
            spawn,
            variant.backend,
            variant.drive,
        )
        for i, case in enumerate(variant.quick)
    ]
    return judge_variant(variant.name, variant.expect, results, stage="quick",
                         seconds=time.monotonic() - started)  # fmt: skip


def _in_parallel(
    calls: Sequence[Callable[[], T]], jobs: int, each: Callable[[T], None] | None = None
) -> list[T]:
    """Results of `calls` in order, `jobs` at a time, each handed to `each`
    as soon as it and those before it are done (so an interrupted run keeps
    them); interrupted, no child survives."""
    pool = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="faultlab-selftest")
    try:
        futures = [pool.submit(call) for call in calls]
        results = []
        for future in futures:
            results.append(future.result())
            if each is not None:
                each(results[-1])
    except KeyboardInterrupt:
        # Interrupted: no new child starts, the live ones are killed, and the
        # workers (which then end at once) are waited for, so none writes
        # into the scratch space after the caller removes it.
        pool.shutdown(wait=False, cancel_futures=True)
        stop_children()
        try:
            pool.shutdown(wait=True)
        finally:
            allow_children()
        raise
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        kill_all()
        raise
    pool.shutdown(wait=True)
    return results


def run_selftest(
    zoo: Zoo, *, variants: Sequence[ZooVariant] | None = None, quick: bool = False,
    jobs: int = 1, workdir: Path, spawn: str = "fork", timeout: float = 60.0,
    progress: RowProgress | None = None, exhaustive: bool = False,
) -> SelftestResult:  # fmt: skip
    """Run the zoo (or `variants` of it) and the reference runtime's false-alarm check
    (`exhaustive`: explore every case of every variant, not its documented ones first,
    and the reference runtime's campaign in full in every configuration and policy)."""
    check_jobs(jobs)
    check_timeout(timeout)
    chosen = tuple(zoo.variants if variants is None else variants)
    if not chosen:
        raise LabUsageError("selftest: no variant to run")
    started = time.monotonic()
    rows: list[SelftestRow] = []

    def add(row: SelftestRow) -> None:
        rows.append(row)
        if progress is not None:
            progress(row)

    try:
        if quick:
            # Single cases: run the variants side by side, `jobs` at a time.
            calls = [partial(_quick_variant, v, workdir / v.name, spawn) for v in chosen]
            _in_parallel(calls, jobs, each=add)  # rows as they finish: kept if interrupted
        elif exhaustive:
            for variant in chosen:
                if variant.explore:
                    add(_explore_variant(variant, jobs, workdir / variant.name, spawn, True))
        else:
            # Documented cases first, variants side by side `jobs` at a time
            # (a variant they do not catch is explored in full, one job).
            calls = [partial(_explore_variant, v, 1, workdir / v.name, spawn)
                     for v in chosen if v.explore]  # fmt: skip
            _in_parallel(calls, jobs, each=add)
        for variant in chosen:
            # --quick: a variant's quick cases stand for its fuzz campaign too.
            if variant.fuzz_examples is not None and not quick:
                where = workdir / "fuzz" / variant.name
                # Caught is caught: its first failing example shows the codes;
                # shrinking it (minutes) is --exhaustive's.
                add(_fuzz_row(variant.name, variant.expect, variant.scenarios, _target(variant),
                              variant.fuzz_examples, variant.timeout, where, jobs,
                              shrink=exhaustive))  # fmt: skip
        add(_reference_row(chosen, quick=quick, jobs=jobs, workdir=workdir / "reference",
                           spawn=spawn, timeout=timeout, exhaustive=exhaustive))  # fmt: skip
        for runtime in (r for r in zoo.foreign if r.quick or not quick):  # other languages
            add(foreign_row(runtime, chosen, stage="quick" if quick else "explore",
                            workdir=workdir / "foreign" / runtime.name,
                            parallel=partial(_in_parallel, jobs=jobs),
                            run_case=lambda case, command, backend, where: _quick_case(
                                case, command, timeout, where, spawn, backend)))  # fmt: skip
        examples = zoo.reference_fuzz_quick_examples if quick else zoo.reference_fuzz_examples
        if exhaustive and zoo.reference_fuzz_exhaustive_examples is not None:
            examples = zoo.reference_fuzz_exhaustive_examples
        if examples is not None:
            # The full campaign draws each example's policy among those that
            # promise every guarantee; --quick's stays on semantic (small, and
            # independent of every-event's io-error planning, docs/decisions.md).
            policies = ("semantic",) if quick else FULL_POLICIES
            add(_fuzz_row(REFERENCE, (), [api.bundled_scenarios()], None, examples, timeout,
                          workdir / "fuzz" / "reference", jobs, policies))  # fmt: skip
    except KeyboardInterrupt as stop:
        stop_children()  # no child may outlive us, nor start now
        allow_children()
        unfinished = SelftestResult(tuple(rows), quick, time.monotonic() - started,
                                    str(zoo.path), complete=False)  # fmt: skip
        raise SelftestInterrupted(unfinished) from stop
    except BaseException:
        kill_all()  # broken: no child may outlive us
        raise
    return SelftestResult(tuple(rows), quick, time.monotonic() - started, str(zoo.path))


def reference_faults(drive: str) -> tuple[str, ...]:
    """The faults the full false-alarm stage runs the reference runtime under:
    `all` and double-sigkill, on either drive."""
    return api.parse_faults(f"all,{DOUBLE_FAULT}", drive=drive)


def _configurations(chosen: Sequence[ZooVariant]) -> list[tuple[str | None, str]]:
    """(backend, drive) pairs the reference runtime is checked under: the default
    one, and each one a chosen variant runs with (a false alarm on SQLite or over
    ACP would make those variants' detections worthless too)."""
    return list(dict.fromkeys([(None, "classic"), *((v.backend, v.drive) for v in chosen)]))


def _reference_row(
    chosen: Sequence[ZooVariant], *, quick: bool, jobs: int, workdir: Path, spawn: str,
    timeout: float, exhaustive: bool = False,
) -> SelftestRow:  # fmt: skip
    started = time.monotonic()
    # The reference runtime at exactly the cases that catch the chosen
    # variants, on their backend and drive, under each scenario's own
    # policy: a false alarm there would make that detection worthless.
    cases = list(dict.fromkeys((c, v.backend, v.drive) for v in chosen for c in v.quick))
    results = _in_parallel(
        [partial(_quick_case, case, None, timeout, workdir / "documented" / str(i), spawn,
                 backend, drive) for i, (case, backend, drive) in enumerate(cases)],
        jobs,
    )  # fmt: skip
    tagged = [("semantic", result) for result in results]
    if not quick:
        tagged += _reference_explorations(chosen, jobs=jobs, workdir=workdir, spawn=spawn,
                                          timeout=timeout, exhaustive=exhaustive)  # fmt: skip
    stage: Stage = "quick" if quick else "explore"
    # A case failing only with codes its policy does not promise is that
    # policy's known gap (oracle/codes.py POLICY_GAPS), not a false alarm.
    # A fault a backend cannot be tested with is listed (and counted), not failed.
    known = [r for policy, r in tagged if r.failed and set(r.codes) <= POLICY_GAPS[policy]]
    judged = [r for policy, r in tagged if r.verdict != "unsupported"
              and not (r.failed and set(r.codes) <= POLICY_GAPS[policy])]  # fmt: skip
    row = judge_reference(judged, stage=stage, seconds=time.monotonic() - started)
    row = dataclasses.replace(row, ran=_ran([r for _policy, r in tagged]))
    if known:
        note = f"{row.note}; {len(known)} failed only with their policy's known gaps"
        row = dataclasses.replace(row, note=note)
    return row


# The full selftest's false-alarm campaign beyond the documented cases: every
# bundled scenario under every fault (and double-sigkill) in full in the
# default configuration and each scenario's own policy; in each configuration
# a chosen variant uses (SQLite, ACP) and under each forced policy, a sample
# of SAMPLE cases per scenario and fault, drawn with a seed of its own so the
# samples together reach other occurrences (docs/selftest.md).  --exhaustive
# explores every one of those in full, as the selftest did before issue 34.
SAMPLE = 2


def _reference_explorations(
    chosen: Sequence[ZooVariant], *, jobs: int, workdir: Path, spawn: str, timeout: float,
    exhaustive: bool,
) -> list[tuple[str, CaseResult]]:  # fmt: skip
    tagged: list[tuple[str, CaseResult]] = []
    runs: list[tuple[str | None, str, str | None]] = [(None, "classic", None)]
    for backend, drive in _configurations(chosen):
        if drive == "agent":
            # The reference HTTP agent (no policies) on the black-box
            # variants' own scenarios: a black-box case costs whole agent
            # processes (seconds), not a forked child.
            used = dict.fromkeys(p for v in chosen if v.drive == "agent" for p in v.scenarios)
            explored = api.explore_agent(
                api.load_scenarios(list(used)), agent="reference", jobs=jobs,
                timeout=timeout, workdir=workdir / "agent",
                faults=("sigkill", "sigkill-agent"), delays_ms=_AGENT_DELAYS,
            )  # fmt: skip
            tagged += [("semantic", r) for r in explored.results]
            continue
        runs += [(backend, drive, policy) for policy in POLICIES]
    for number, (backend, drive, policy) in enumerate(runs):
        full = exhaustive or number == 0
        explored = api.explore_paths(
            [api.bundled_scenarios()], jobs=jobs, timeout=timeout,
            workdir=workdir / str(number), spawn=spawn, policy=policy,
            faults=reference_faults(drive), backend=backend, drive=drive,
            max_double=DEFAULT_MAX_DOUBLE,
            select=None if full else Selection(sample=SAMPLE, seed=number),
        )  # fmt: skip
        tagged += [(policy or "semantic", r) for r in explored.results]
    return tagged
