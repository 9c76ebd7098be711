# Delays by bisection for black-box agents (issue 34, `explore --agent NAME
# --delays bisect`).  A real agent persists on its own timers, so whether a
# kill loses work depends on how long after a boundary it lands.  Instead of
# a fixed grid of delays, each (boundary occurrence, fault) is probed at 0 ms
# and at the largest delay, once each; wherever one of two neighbouring probed
# delays was safe and the other not, one run goes between them, until the
# neighbours are closer than the resolution; then the delays beside each
# change get their repeats, and a delay whose runs disagree among themselves
# is a race and gets more runs.  The result is, per boundary, the
# agent's persistence lag: lost up to X ms after it, safe from Y ms, a race in
# between, with the runs behind each figure.  Each round of probes is one pass
# of the engine's worker pool (faultlab/lab/campaigns/engine.py) over the
# fault-free runs of the first round, so interrupts, containment and case
# directories are the engine's.
from __future__ import annotations

import itertools
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from faultlab.lab.campaigns.engine import ExploreResult, Interrupted, Progress, run_drive
from faultlab.lab.campaigns.select import keyword_matcher
from faultlab.lab.drives.protocol import COVERAGE, Drive
from faultlab.lab.errors import LabUsageError, check_jobs
from faultlab.lab.oracle.case import Case, CaseResult
from faultlab.lab.process.reference import Reference
from faultlab.lab.servers.points import KillPoint, parse_kill_point
from faultlab.scenario import Scenario

__all__ = ["BisectResult", "Lag", "bisect_delays"]

DEFAULT_MAX_DELAY_MS = 1000
DEFAULT_RESOLUTION_MS = 25
# A delay whose runs disagree is run until it has this many runs (at least).
RACE_RUNS = 4

Outcome = tuple[str, tuple[str, ...]]  # (verdict, codes) of one run


@dataclass(frozen=True, slots=True)
class Lag:
    """One (scenario, boundary occurrence, fault): each probed delay's runs."""

    scenario: str
    occurrence: str
    fault: str
    runs: dict[int, tuple[Outcome, ...]] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"{Path(self.scenario).name}::{self.occurrence}[{self.fault}]"

    def kind(self, delay: int) -> str:
        """"lost" (every run failed), "safe" (every run passed) or "race"."""
        verdicts = {verdict == "pass" for verdict, _codes in self.runs[delay]}
        return "race" if len(verdicts) > 1 else ("safe" if verdicts == {True} else "lost")

    @property
    def lost_up_to(self) -> int | None:
        """The largest probed delay up to which every probe lost the work."""
        last = None
        for delay in sorted(self.runs):
            if self.kind(delay) != "lost":
                break
            last = delay
        return last

    @property
    def safe_from(self) -> int | None:
        """The smallest probed delay from which every probe kept the work."""
        first = None
        for delay in sorted(self.runs, reverse=True):
            if self.kind(delay) != "safe":
                break
            first = delay
        return first

    @property
    def races(self) -> tuple[int, ...]:
        return tuple(d for d in sorted(self.runs) if self.kind(d) == "race")

    def summary(self) -> str:
        """One line: where the outcome changes, with the runs that show it."""
        delays = sorted(self.runs)
        counts = ", ".join(
            f"{d} ms {sum(v != 'pass' for v, _c in self.runs[d])}/{len(self.runs[d])} lost"
            for d in delays
        )
        lost, safe = self.lost_up_to, self.safe_from
        if lost == delays[-1]:
            text = f"lost at every delay probed (0 to {delays[-1]} ms)"
        elif safe == delays[0]:
            text = f"safe at every delay probed (0 to {delays[-1]} ms)"
        else:
            parts = []
            if lost is not None:
                parts.append(f"lost up to {lost} ms after the boundary")
            if self.races:
                parts.append(f"a race at {', '.join(str(d) for d in self.races)} ms")
            parts.append(f"safe from {safe} ms" if safe is not None else "never safe")
            text = ", ".join(parts)
        return f"{self.key}: {text} ({counts})"

    def to_json(self) -> dict[str, object]:
        return {
            "case": self.key, "lostUpToMs": self.lost_up_to, "safeFromMs": self.safe_from,
            "raceMs": list(self.races),
            "runs": {str(d): [[v, list(c)] for v, c in self.runs[d]] for d in sorted(self.runs)},
        }  # fmt: skip


@dataclass(frozen=True, slots=True)
class BisectResult:
    explored: ExploreResult  # every case run, rounds in order (the report's cases)
    lags: tuple[Lag, ...]
    rounds: int


@dataclass(slots=True)
class _Probe:
    scenario: str
    occurrence: str
    fault: str
    runs: dict[int, list[Outcome]] = field(default_factory=dict)

    def lag(self) -> Lag:
        return Lag(self.scenario, self.occurrence, self.fault,
                   {d: tuple(r) for d, r in self.runs.items() if r})  # fmt: skip

    def wanted(self, repeats: int, top: int, resolution: int) -> dict[int, int]:
        """Runs to add per delay.  The search first: one run at each end, then
        one run between every two neighbouring delays further apart than the
        resolution where one was safe (every run kept the work) and the other
        not.  Once it has converged, the edges get their repeats: each delay
        beside such a change is topped up to `repeats` runs, a race to
        RACE_RUNS; a run that loses the work at a safe edge moves the change
        and the search goes on.  Where the ends agree, the edge is the end a
        change would be nearest: 0 ms if both kept the work, the far end if
        both lost it.  A delay inside a stretch of equal outcomes keeps its
        one run: the edges' repeats stand for the stretch."""
        if not self.runs:
            return {0: 1, top: 1} if top > 0 else {0: repeats}
        lag = self.lag()
        delays = sorted(self.runs)
        kinds = {delay: lag.kind(delay) for delay in delays}
        changes = [(low, high) for low, high in itertools.pairwise(delays)
                   if (kinds[low] == "safe") != (kinds[high] == "safe")]  # fmt: skip
        search = {_between(low, high, resolution): 1
                  for low, high in changes if high - low > resolution}  # fmt: skip
        if search:
            return search
        edges = {delay for pair in changes for delay in pair}
        if not edges:
            edges = {delays[0] if kinds[delays[0]] == "safe" else delays[-1]}
        more = {}
        for delay in edges | {d for d in delays if kinds[d] == "race"}:
            need = max(RACE_RUNS, repeats) if kinds[delay] == "race" else repeats
            if len(self.runs[delay]) < need:
                more[delay] = need - len(self.runs[delay])
        return more


def _between(low: int, high: int, resolution: int) -> int:
    """The delay probed between two that disagree: their geometric mean (with
    `resolution` standing in for 0 ms) while the gap spans more than a
    doubling, since agents' lags cluster in the first tens of milliseconds
    after a boundary; the arithmetic midpoint after that."""
    base = max(low, resolution)
    middle = math.isqrt(base * high) if high > 2 * base else (low + high) // 2
    return min(max(middle, low + 1), high - 1)


def bisect_delays(
    drive: Drive, scenarios: Sequence[tuple[str, Scenario]], *, faults: Sequence[str],
    jobs: int = 1, repeats: int = 1, max_delay_ms: int = DEFAULT_MAX_DELAY_MS,
    resolution_ms: int = DEFAULT_RESOLUTION_MS, keyword: str | None = None,
    progress: Progress | None = None,
) -> BisectResult:  # fmt: skip
    """Bisect the kill delay of every boundary occurrence (and fault) of
    `scenarios` on the agent drive `drive`; `keyword` (-k) keeps only the
    occurrences whose `scenario::occurrence[fault]` it matches."""
    if drive.name != "agent":
        raise LabUsageError(f"--delays bisect applies to the agent drive, not {drive.name}")
    check_jobs(jobs)
    for name, value, low in (("repeats", repeats, 1), ("max delay", max_delay_ms, 0),
                             ("resolution", resolution_ms, 1)):  # fmt: skip
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise LabUsageError(f"--delays bisect: {name} must be an integer >= {low}")
    match = keyword_matcher(keyword) if keyword is not None else None
    drive = drive.for_jobs(jobs)
    wanted = drive.parse_faults(faults)
    drive = drive.for_faults(wanted)
    started = time.monotonic()
    probes: dict[str, list[_Probe]] = {}  # by fault-free run (scenario_path)
    results: list[CaseResult] = []
    rounds = 0
    pending: dict[str, list[Case]] = {}

    def plan_round(reference: Reference) -> list[Case]:
        path = reference.scenario_path
        if path not in probes:  # the first round: this scenario's probes
            probes[path] = [
                _Probe(path, occurrence, fault) for fault in wanted
                for occurrence in reference.occurrences
                if match is None or match(f"{Path(path).name}::{occurrence}[{fault}]")
            ]  # fmt: skip
            pending[path] = _cases(probes[path], repeats, max_delay_ms, resolution_ms)
        return pending.get(path, [])

    by_given: dict[str, Reference] = {}  # a scenario's path as given -> its fault-free run

    def cached(path: str, scenario: Scenario) -> Reference:
        return by_given[path]

    todo = list(scenarios)
    while todo:
        rounds += 1
        first = rounds == 1
        try:
            part = run_drive(drive, todo, wanted, plan_round, jobs=jobs, shard=None,
                              progress=progress, coverage=first,
                              reference=None if first else cached)  # fmt: skip
        except Interrupted as stop:  # what every round finished is kept
            kept = (*results, *stop.partial.results)
            raise Interrupted(ExploreResult(kept, tuple(by_given.values()),
                                            time.monotonic() - started, None,
                                            complete=False)) from stop  # fmt: skip
        if first:  # the engine returns the fault-free runs in the order given
            by_given = {path: ref for (path, _s), ref in zip(todo, part.references, strict=True)}
        results += part.results
        for result in part.results:
            if result.case.occurrence != COVERAGE:
                _record(probes.get(result.case.scenario, []), result)
        if not part.complete or part.stopped:
            break
        pending = {path: _cases(found, repeats, max_delay_ms, resolution_ms)
                   for path, found in probes.items()}  # fmt: skip
        todo = [(p, s) for p, s in scenarios if p in by_given
                and pending.get(by_given[p].scenario_path)]  # fmt: skip
    explored = ExploreResult(tuple(results), tuple(by_given.values()),
                             time.monotonic() - started, None)  # fmt: skip
    lags = tuple(probe.lag() for found in probes.values() for probe in found if probe.runs)
    return BisectResult(explored, lags, rounds)


def _cases(found: list[_Probe], repeats: int, top: int, resolution: int) -> list[Case]:
    cases = []
    for probe in found:
        for delay, count in sorted(probe.wanted(repeats, top, resolution).items()):
            boundary, _, n = probe.occurrence.partition("#")
            point = KillPoint(boundary, int(n), delay)
            done = len(probe.runs.get(delay, ()))
            cases += [Case(probe.scenario, f"{point}~{done + i}", probe.fault)
                      for i in range(1, count + 1)]  # fmt: skip
    return cases


def _record(found: list[_Probe], result: CaseResult) -> None:
    point = parse_kill_point(result.case.occurrence.partition("~")[0])
    occurrence = f"{point.boundary}#{point.n}"
    for probe in found:
        if probe.occurrence == occurrence and probe.fault == result.case.fault:
            outcome = (result.verdict, tuple(sorted(result.codes)))
            probe.runs.setdefault(point.delay_ms, []).append(outcome)
            return
