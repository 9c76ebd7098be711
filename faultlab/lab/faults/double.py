# Crashes during recovery (the `double-sigkill` fault): SIGKILL the target at
# a first kill point K1, let it repair, SIGKILL the --resume child at one of
# the boundary occurrences K2 *it* reaches, then repair and resume again to
# the end, and check every guarantee against the ground truth of both
# crashes.  A single SIGKILL case never crashes a resumed run, so a runtime
# that checkpoints correctly on a fresh run and not on a resumed one passes
# it; this is the case kind that catches it.
#
# Planning needs processes: which occurrences a resume reaches after K1 is
# known only by running one (a fault-free recovery after K1, the "probe").
# Both the K1s probed and the (K1, K2) pairs kept are bounded and sampled
# with a fixed seed, so the plan is stable and its cost is bounded.
from __future__ import annotations

import random
import shutil
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from faultlab.lab.errors import LabUsageError
from faultlab.lab.faults.sigkill import crash_phase, recover
from faultlab.lab.oracle.case import Case, CaseResult
from faultlab.lab.oracle.codes import Violation
from faultlab.lab.oracle.double import FirstCrash, check_double
from faultlab.lab.oracle.verdicts import drifted, hung
from faultlab.lab.process.reference import (
    LabOptions,
    Reference,
    make_child,
    run_to_exit,
    slug,
    store_of,
    write_trace,
)
from faultlab.lab.process.spawn import ChildExit, ChildHung
from faultlab.probe import ProbeError, parse_occurrence

__all__ = [
    "DEFAULT_MAX_DOUBLE",
    "DOUBLE_FAULT",
    "DOUBLE_SEED",
    "NO_RESUME_POINT",
    "PlanProgress",
    "ResumeProbe",
    "parse_pair",
    "plan_double_cases",
    "plan_pairs",
    "resume_occurrences",
    "run_double_case",
]

DOUBLE_FAULT = "double-sigkill"
# Per scenario: at most this many K1s are probed and this many (K1, K2)
# cases kept (0: no bound, the exhaustive set).  Sized so a scenario's double
# cases cost about what its single SIGKILL cases cost (docs/cli.md).
DEFAULT_MAX_DOUBLE = 24
DOUBLE_SEED = 19
# The K2 of a case whose probe (the fault-free recovery after K1) failed: the
# case re-runs the probe and reports why, instead of silently planning none.
NO_RESUME_POINT = "none"
# Told (scenario file name, K1s probed so far, K1s to probe) after each probe:
# planning runs one recovery per K1, long enough to need a progress line.
PlanProgress = Callable[[str, int, int], None]
# Runs a fault-free recovery after a kill at K1 (first argument) in a scratch
# folder (second): the occurrences its resume reached, or why it failed.
ResumeProbe = Callable[[str, Path], tuple[tuple[str, ...], str | None]]


def parse_pair(occurrence: str) -> tuple[str, str]:
    """Split ``"tool/effect#1+request/durable#2"`` into its two occurrences
    (each normalised to ``name#n``; K2 may be ``none``).  Raises LabUsageError."""
    first, plus, second = occurrence.partition("+")
    if not plus:
        raise LabUsageError(
            f"a {DOUBLE_FAULT} case needs two kill points K1+K2 (like tool/effect#1+"
            f"request/durable#1), not {occurrence!r}"
        )
    try:
        name, n = parse_occurrence(first)
        k1 = f"{name}#{n}"
        if second == NO_RESUME_POINT:
            return k1, second
        name, n = parse_occurrence(second)
    except ProbeError as exc:
        raise LabUsageError(f"{occurrence}: {exc}") from None
    return k1, f"{name}#{n}"


@dataclass(frozen=True, slots=True)
class _Probe:
    """What a fault-free recovery after K1 reached: its resume's occurrences,
    or why it could not run."""

    first: str
    occurrences: tuple[str, ...]
    failure: str | None = None


def resume_occurrences(
    reference: Reference, options: LabOptions, first: str, *, where: Path
) -> tuple[tuple[str, ...], str | None]:
    """Kill at `first`, repair, resume unarmed to the end: the boundary
    occurrences the resume reached (in its own numbering), or a failure."""
    shutil.rmtree(where, ignore_errors=True)
    session = where / "session"
    store = store_of(options, reference.scenario)
    case = Case(reference.scenario_path, first, "sigkill")
    try:
        crash = crash_phase(case, reference, options, session=session, where=where)
        if crash.failure is not None:
            return (), f"the crash at {first}: {crash.failure[2] or crash.failure[1][0].message}"
        if store.exists(session):
            repaired = run_to_exit(
                make_child(options, case.scenario, session, "repair", "repair"), options.timeout
            )  # fmt: skip
            if repaired.returncode != 0:
                return (), f"the repair after {first} exited {repaired.returncode}"
        resume = make_child(options, case.scenario, session, "resume", "resume")
        status = run_to_exit(resume, options.timeout)
    except ChildHung as exc:
        return (), f"the recovery after {first} hung: {exc}"
    finally:
        shutil.rmtree(where, ignore_errors=True)
    if status.returncode != 0:
        return (), f"the resume after {first} exited {status.returncode}"
    return tuple(f"{m['boundary']}#{m['n']}" for m in resume.trace if "boundary" in m), None


def plan_double_cases(
    reference: Reference, options: LabOptions, *, max_cases: int = DEFAULT_MAX_DOUBLE,
    seed: int = DOUBLE_SEED, jobs: int = 1, progress: PlanProgress | None = None,
) -> list[Case]:  # fmt: skip
    """The `double-sigkill` cases of a scenario, K1 in trace order then K2 in
    the resume's order (see `plan_pairs`)."""
    return plan_pairs(
        reference, lambda first, where: resume_occurrences(reference, options, first, where=where),
        workdir=options.workdir, max_cases=max_cases, seed=seed, jobs=jobs, progress=progress,
    )  # fmt: skip


def plan_pairs(
    reference: Reference, probe: ResumeProbe, *, workdir: Path,
    max_cases: int = DEFAULT_MAX_DOUBLE, seed: int = DOUBLE_SEED, jobs: int = 1,
    progress: PlanProgress | None = None,
) -> list[Case]:  # fmt: skip
    """The (K1, K2) cases of a scenario, whatever runs its recoveries (the
    classic drive, or the ACP drive's session/load): `probe(first, where)`
    runs a fault-free recovery after a kill at `first` in folder `where`.
    With `max_cases` > 0, at most that many K1s are probed and that many
    pairs kept, each sampled with `seed` (stable: the same scenario and
    options give the same cases).  `progress` is told after each probe
    (from the probing threads, one at a time)."""
    if max_cases < 0:
        raise LabUsageError(f"max double cases must be >= 0 (0: all), not {max_cases}")
    firsts = list(reference.occurrences)
    rng = random.Random(f"{seed}:{Path(reference.scenario_path).name}")
    if max_cases and len(firsts) > max_cases:
        keep = set(rng.sample(range(len(firsts)), max_cases))
        firsts = [o for i, o in enumerate(firsts) if i in keep]
    base = workdir / "double-plan" / slug(Path(reference.scenario_path).name)

    name = Path(reference.scenario_path).name
    lock = threading.Lock()
    probed = 0

    def run_probe(item: tuple[int, str]) -> _Probe:
        nonlocal probed
        index, first = item
        reached, failure = probe(first, base / str(index))
        if progress is not None:
            with lock:
                probed += 1
                progress(name, probed, len(firsts))
        return _Probe(first, reached, failure)

    with ThreadPoolExecutor(max(1, jobs), thread_name_prefix="faultlab-double-plan") as pool:
        probes = list(pool.map(run_probe, enumerate(firsts)))
    seconds = [(NO_RESUME_POINT,) if p.failure is not None else p.occurrences for p in probes]
    pairs = [(i, j) for i, group in enumerate(seconds) for j in range(len(group))]
    if max_cases and len(pairs) > max_cases:
        pairs = sorted(_spread(seconds, max_cases, rng))
    return [
        Case(reference.scenario_path, f"{probes[i].first}+{seconds[i][j]}", DOUBLE_FAULT)
        for i, j in pairs
    ]


def _spread(
    seconds: Sequence[Sequence[str]], bound: int, rng: random.Random
) -> list[tuple[int, int]]:
    """`bound` (first, second) index pairs, spread over the first kill points
    and over the kinds of second kill point: round by round, each first kill
    point with a second left (in a shuffled order) gets one more, of the
    boundary chosen least often so far (ties drawn at random).  A uniform
    draw over all pairs would leave some first kill points, and rare kinds
    of second one (the body of a tool the resume runs again), without a case."""
    left = [rng.sample(range(len(group)), len(group)) for group in seconds]
    used: Counter[str] = Counter()
    chosen: list[tuple[int, int]] = []
    while len(chosen) < bound:
        order = [i for i, rest in enumerate(left) if rest]
        rng.shuffle(order)
        for i in order[: bound - len(chosen)]:
            rest = left[i]
            pick = min(range(len(rest)), key=lambda k: used[_kind(seconds[i][rest[k]])])
            j = rest.pop(pick)
            used[_kind(seconds[i][j])] += 1
            chosen.append((i, j))
    return chosen


def _kind(occurrence: str) -> str:
    return occurrence.partition("#")[0]


def run_double_case(case: Case, reference: Reference, options: LabOptions) -> CaseResult:
    """Kill at K1, repair, resume armed at K2 and kill it there, then repair
    and resume to the end; judge both crashes together (docs/guarantees.md)."""
    started = time.monotonic()
    first, second = parse_pair(case.occurrence)
    where = options.workdir / "cases" / slug(case.id)
    shutil.rmtree(where, ignore_errors=True)
    artifacts = {"dir": str(where)}

    def result(verdict: Any, violations: Sequence[Violation], detail: str = "") -> CaseResult:
        return CaseResult(
            case, verdict, tuple(violations), time.monotonic() - started, detail, artifacts
        )

    if second == NO_RESUME_POINT:
        _reached, failure = resume_occurrences(reference, options, first, where=where / "probe")
        message = failure or f"the fault-free recovery after {first} failed while planning"
        return result("error", [Violation("RESUME_FAILED", message)], message)
    session = where / "session"
    store = store_of(options, reference.scenario)
    log_path = store.log_path(session)
    crash = crash_phase(
        Case(case.scenario, first, "sigkill"), reference, options, session=session, where=where
    )  # fmt: skip
    if crash.failure is not None:
        return result(*crash.failure)
    artifacts["trace"] = str(where / "trace.jsonl")
    try:
        crashed_bytes = store.take(session)
        artifacts["crashed1"] = str(store.save(crashed_bytes, where, "crashed1"))
        repair_status = ChildExit(0, "")
        if store.exists(session):
            repair = make_child(options, case.scenario, session, "repair", "repair1")
            repair_status = run_to_exit(repair, options.timeout)
        repaired_bytes = store.take(session)
        artifacts["repaired1"] = str(store.save(repaired_bytes, where, "repaired1"))
        crashed = store.parse(crashed_bytes, log_path)
        first_crash = FirstCrash(
            trace=crash.trace, crashed=crashed, repair_status=repair_status,
            repaired=store.parse(repaired_bytes, log_path) if crashed_bytes else crashed,
        )  # fmt: skip
        if repair_status.returncode != 0:
            return result("fail", check_double(first_crash, None))
        resume = make_child(options, case.scenario, session, "resume", "resume1", armed=second)
        with resume:
            parked = resume.run_until_parked_or_exit(options.timeout)
            if parked is None:
                status = resume.wait(options.timeout)
                detail = (
                    f"the resume after {first} exited with status {status.returncode} without "
                    f"reaching {second} (its fault-free recovery did)"
                )
                return result(*drifted(detail), detail)
            resume.kill()
            resume.wait(options.timeout)
        write_trace(where / "resume-trace.jsonl", resume.trace)
        artifacts["resumeTrace"] = str(where / "resume-trace.jsonl")
        again_bytes = store.take(session)
        observation = recover(
            case, reference, options, where=where, trace=tuple(resume.trace),
            crashed=store.parse(again_bytes, log_path), crashed_bytes=again_bytes,
            artifacts=artifacts,
        )  # fmt: skip
    except ChildHung as exc:
        return result(*hung(f"recovery of {case.id}: {exc}"))
    violations = check_double(first_crash, observation)
    return result("fail" if violations else "pass", violations)
