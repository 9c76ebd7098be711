# The benchmarks of issue 4: one function per figure, each measuring its pair
# side by side in one run (repetitions interleaved, medians reported), plus
# `run_all`.  It owns measurement only: it calls the lab and the runtime
# through their public functions and asserts nothing about time (the table,
# targets and JSON file are `faultlab.bench.report`'s).  `faultlab bench` and
# `benchmarks/*.py` are thin callers.
from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import platform
import shutil
import signal
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TypeVar

import orjson

from faultlab import lab
from faultlab.bench.report import acceptance, table, write_json
from faultlab.bench.synthlog import TOOLS_TOML, SyntheticLog, write_synthetic_log
from faultlab.lab.campaigns.explore import COVERAGE, explore, load_scenarios, plan_cases, run_one
from faultlab.lab.oracle.case import Case
from faultlab.lab.oracle.expected import expected_repair
from faultlab.lab.process.forkserver import shared_servers
from faultlab.lab.process.reference import LabOptions, Reference, run_reference
from faultlab.lab.process.scratch import scratch_root
from faultlab.lab.read.jsonl import read_log_file
from faultlab.lab.read.lines import Loads
from faultlab.runtime.agent import Agent
from faultlab.runtime.backends import JsonlBackend
from faultlab.runtime.checkpoints import policy_plugin
from faultlab.runtime.host import Host
from faultlab.runtime.ledger import WorldLedger
from faultlab.runtime.model import ScriptedModel
from faultlab.runtime.persistence import PersistenceCoordinator
from faultlab.runtime.session import SessionLog
from faultlab.runtime.tools import ScriptedTools
from faultlab.scenario import Scenario, parse_scenario

__all__ = [
    "SECTIONS",
    "BenchError",
    "CheckpointCost",
    "CrashLoop",
    "ExploreJobs",
    "LogReload",
    "PolicyRun",
    "ReloadShape",
    "acceptance",
    "checkpoint_cost",
    "crash_loop",
    "explore_jobs",
    "log_reload",
    "run_all",
    "run_sections",
    "script_main",
    "table",
    "write_json",
]

T = TypeVar("T")
Say = Callable[[str], None]
POLICIES = ("semantic", "turn-only", "every-event")
_REPO = Path(__file__).resolve().parents[2]


class BenchError(RuntimeError):
    """A benchmark could not measure what it meant to (not a slow result)."""


def _quiet(_text: str) -> None:
    pass


def _side_by_side(rounds: int, sides: Sequence[Callable[[], T]]) -> list[list[T]]:
    """Run every side once per round, alternating the order (A,B then B,A), so
    the sides share the machine's noise and neither always goes first."""
    samples: list[list[T]] = [[] for _ in sides]
    for round_ in range(rounds):
        order = range(len(sides)) if round_ % 2 == 0 else reversed(range(len(sides)))
        for index in order:
            gc.collect()
            samples[index].append(sides[index]())
    return samples


def _median(values: Sequence[float]) -> float:
    return float(statistics.median(values))


# --- a. the crash loop ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CrashLoop:
    """SIGKILL cases of one scenario, fork vs exec, and the bare fork floor.

    ``*_seconds`` hold one sample per round: the time of all ``cases`` in
    that mode, each case run in every mode back to back (the order rotates),
    followed by a slice of the floor.  ``fork`` is the default fork server
    (children forked ahead of the requests, warming up while they wait);
    ``on_request`` the same server forking only when asked and ``cold`` one
    whose children do not warm up (for information: what forking ahead and
    the warm-up give one job).  The floor is the median of
    ``floor_repetitions`` fork + park + SIGKILL + reap.
    """

    scenario: str
    cases: int
    rounds: int
    fork_seconds: tuple[float, ...]
    on_request_seconds: tuple[float, ...]
    cold_seconds: tuple[float, ...]
    exec_seconds: tuple[float, ...]
    verdicts: dict[str, int]
    fork_cases_per_s: float
    on_request_cases_per_s: float
    exec_cases_per_s: float
    fork_vs_exec: float
    fork_vs_on_request: float
    fork_vs_cold: float
    fork_ms_per_case: float
    on_request_ms_per_case: float
    cold_ms_per_case: float
    exec_ms_per_case: float
    floor_ms: float
    # The floor's median within each round (its samples are taken between
    # that round's cases), so that each round's fork case has a floor
    # measured beside it: `faultlab.bench.report` shows the spread of the
    # per-round ratios next to the target.
    floor_round_ms: tuple[float, ...]
    floor_repetitions: int
    floor_parent_rss_mb: float | None  # a fork's cost grows with the parent's size
    fork_case_vs_floor: float
    # A SIGKILL case is several processes (crash, repair, resume): the mean
    # count per fork case, and the fork case per process against the floor.
    processes_per_case: float
    fork_process_vs_floor: float


def _fork_park_kill() -> float:
    """Seconds to fork a trivial child in its own process group, see it park
    on a pipe, SIGKILL its group and reap it."""
    started = time.perf_counter()
    ready_r, ready_w = os.pipe()
    park_r, park_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: raw system calls only, then _exit
        try:
            os.close(ready_r)
            os.close(park_w)  # so that EOF arrives if the parent dies
            os.setpgid(0, 0)
            os.write(ready_w, b"r")
            os.read(park_r, 1)
        finally:
            os._exit(0)
    try:
        os.close(ready_w)
        os.close(park_r)
        os.read(ready_r, 1)  # parked, in its own group (set before it wrote)
        os.killpg(pid, signal.SIGKILL)
    finally:
        os.waitpid(pid, 0)
        os.close(ready_r)
        os.close(park_w)
    return time.perf_counter() - started


def _rss_mb() -> float | None:
    """This process's resident set size now (Linux), in MB."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return pages * os.sysconf("SC_PAGE_SIZE") / 1e6


# The crash loop's modes: (name, spawn, children kept forked ahead, warm-up).
_MODES = (
    ("fork", "fork", None, True),
    ("on_request", "fork", 0, True),
    ("cold", "fork", None, False),
    ("exec", "exec", None, True),
)


def crash_loop(quick: bool, *, say: Say = _quiet) -> CrashLoop:
    """Crash cases per second of payment.toml with spawn fork vs exec (and
    fork without forking ahead), and the fork case's cost as a multiple of
    the bare fork-and-kill floor."""
    scenario = str(lab.bundled_scenarios() / "payment.toml")
    rounds, floor_per_round = (2, 200) if quick else (3, 1000)
    with lab.workdir() as work:
        references: dict[str, Reference] = {}
        options: dict[str, LabOptions] = {}
        for mode, spawn, ahead, warm in _MODES:
            references[mode] = lab.reference_run(scenario, workdir=work / mode, spawn=spawn)
            if references[mode].returncode != 0:
                raise BenchError(f"the {mode} reference run of {scenario} failed")
            options[mode] = LabOptions(
                lab.make_target(), work / mode, 60.0, spawn, ahead, fork_warm=warm
            )
        cases = [c for c in plan_cases(references["fork"]) if c.occurrence != COVERAGE]
        if quick:  # a handful, spread over the run
            cases = cases[:: max(1, len(cases) // 3)][:3]
        verdicts: Counter[str] = Counter()
        floor: list[list[float]] = []  # per round
        floor_per_case = -(-floor_per_round // len(cases))
        names = [mode for mode, _spawn, _ahead, _warm in _MODES]

        children: list[int] = []  # processes per fork case (each left its stderr file)

        def timed_case(mode: str, case: Case) -> float:
            started = time.perf_counter()
            result = run_one(case, references[mode], options[mode])
            seconds = time.perf_counter() - started
            verdicts[result.verdict] += 1
            if mode == "fork" and "dir" in result.artifacts:
                children.append(len(list(Path(result.artifacts["dir"]).glob("*.stderr"))))
            return seconds

        def one_round(round_: int) -> dict[str, float]:
            # Finest interleaving: each case in every mode, the order
            # rotating from case to case, then a slice of the floor.
            totals = dict.fromkeys(names, 0.0)
            floor.append([])
            for index, case in enumerate(cases):
                shift = (index + round_) % len(names)
                for mode in names[shift:] + names[:shift]:
                    totals[mode] += timed_case(mode, case)
                floor[-1].extend(_fork_park_kill() for _ in range(floor_per_case))
            say(
                f"crash loop round {round_ + 1}/{rounds}: {len(cases)} case(s), "
                + ", ".join(f"{mode} {totals[mode]:.2f}s" for mode in names)
            )
            return totals

        for mode in names:  # warm up: the fork servers, imports, page cache
            run_one(cases[0], references[mode], options[mode])
        rss = _rss_mb()
        samples: dict[str, list[float]] = {mode: [] for mode in names}
        for round_ in range(rounds):
            gc.collect()
            for mode, seconds in one_round(round_).items():
                samples[mode].append(seconds)
    median = {mode: _median(samples[mode]) for mode in names}
    per_case_ms = {mode: median[mode] / len(cases) * 1000 for mode in names}
    floor_ms = _median([seconds for one in floor for seconds in one]) * 1000
    processes = statistics.fmean(children) if children else 0.0
    return CrashLoop(
        scenario=Path(scenario).name,
        cases=len(cases),
        rounds=rounds,
        fork_seconds=tuple(samples["fork"]),
        on_request_seconds=tuple(samples["on_request"]),
        cold_seconds=tuple(samples["cold"]),
        exec_seconds=tuple(samples["exec"]),
        verdicts=dict(verdicts),
        fork_cases_per_s=len(cases) / median["fork"],
        on_request_cases_per_s=len(cases) / median["on_request"],
        exec_cases_per_s=len(cases) / median["exec"],
        fork_vs_exec=median["exec"] / median["fork"],
        fork_vs_on_request=median["on_request"] / median["fork"],
        fork_vs_cold=median["cold"] / median["fork"],
        fork_ms_per_case=per_case_ms["fork"],
        on_request_ms_per_case=per_case_ms["on_request"],
        cold_ms_per_case=per_case_ms["cold"],
        exec_ms_per_case=per_case_ms["exec"],
        floor_ms=floor_ms,
        floor_round_ms=tuple(_median(one) * 1000 for one in floor),
        floor_repetitions=sum(map(len, floor)),
        floor_parent_rss_mb=rss,
        fork_case_vs_floor=per_case_ms["fork"] / floor_ms,
        processes_per_case=processes,
        fork_process_vs_floor=per_case_ms["fork"] / processes / floor_ms if processes else 0.0,
    )


# --- b. exploration with jobs -----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ExploreJobs:
    """Wall time of one whole exploration with --jobs 1 and --jobs 2, with the
    default fork server (children forked ahead) and, for information, with
    the server forking on request: forking ahead uses the second core for a
    single job, which takes part of what a second job would gain.  Also for
    information: --jobs 2 with children that do not warm up while they
    wait, as the lab's children do not with more jobs than CPUs
    (``cold_jobs2``)."""

    scenarios: tuple[str, ...]
    cases: int
    rounds: int
    jobs1_seconds: tuple[float, ...]
    jobs2_seconds: tuple[float, ...]
    on_request_jobs1_seconds: tuple[float, ...]
    on_request_jobs2_seconds: tuple[float, ...]
    cold_jobs2_seconds: tuple[float, ...]
    all_passed: bool
    jobs1_median: float
    jobs2_median: float
    speedup: float
    on_request_jobs1_median: float
    on_request_jobs2_median: float
    on_request_speedup: float
    cold_jobs2_median: float
    cold_vs_default_jobs2: float  # > 1: the default (warm-up on 2 cores) is faster
    # CPU seconds (the lab, the fork server and its children) per wall
    # second: how many of the 2 cores each side kept busy.  A single job
    # that already keeps 1.2 cores busy can gain at most 2/1.2 from a second.
    jobs1_cores: float
    jobs2_cores: float
    on_request_jobs1_cores: float
    on_request_jobs2_cores: float
    jobs1_cpu_ms_per_case: float
    jobs2_cpu_ms_per_case: float


def _explore_paths(quick: bool) -> list[Path]:
    if not quick:
        return [lab.bundled_scenarios()]
    tests = _REPO / "tests" / "scenarios"
    small = [tests / "tiny.toml", tests / "tiny-tool.toml"]
    if all(path.is_file() for path in small):
        return small
    return [lab.bundled_scenarios() / "payment.toml", lab.bundled_scenarios() / "chat.toml"]


def explore_jobs(quick: bool, *, say: Say = _quiet) -> ExploreJobs:
    """`faultlab explore` of every bundled scenario (quick: two small ones),
    --jobs 1 vs --jobs 2; the same with the fork server forking on request."""
    paths = _explore_paths(quick)
    scenarios = load_scenarios(paths)
    rounds = 1 if quick else 3
    cases: set[int] = set()
    passed: list[bool] = []

    def one_round(
        jobs: int, ahead: int | None, warm: bool | None = None
    ) -> Callable[[], tuple[float, float]]:
        def run() -> tuple[float, float]:
            with lab.workdir() as work:
                options = LabOptions(lab.make_target(), work, 60.0, "fork", ahead, warm)
                cpu_before = _lab_cpu_seconds()
                started = time.perf_counter()
                result = explore(scenarios, options, jobs=jobs)
                seconds = time.perf_counter() - started
                cpu = _lab_cpu_seconds() - cpu_before
            cases.add(len(result.results))
            passed.append(result.passed)
            how = "forked ahead" if ahead is None else "forked on request"
            how += "" if warm is None else (", warm" if warm else ", cold")
            say(
                f"explore: {len(result.results)} case(s) with {jobs} job(s), {how}, "
                f"in {seconds:.1f}s, {cpu / seconds:.2f} cores busy"
            )
            return seconds, cpu

        return run

    first_path, first_scenario = scenarios[0]
    for ahead in (None, 0):  # start and warm up every fork server the runs use
        for warm in (True, False):
            with lab.workdir() as work:
                options = LabOptions(lab.make_target(), work, 60.0, "fork", ahead, warm)
                run_reference(first_path, first_scenario, options)
    sides = _side_by_side(
        rounds,
        [
            one_round(1, None),
            one_round(2, None),
            one_round(1, 0),
            one_round(2, 0),
            one_round(2, None, warm=False),
        ],
    )
    jobs1, jobs2, request1, request2, cold2 = (
        [seconds for seconds, _cpu in side] for side in sides
    )
    cores = [_median([cpu / seconds for seconds, cpu in side]) for side in sides]
    cpu_per_case = [_median([cpu for _seconds, cpu in side]) / max(cases) * 1000 for side in sides]
    one, two = _median(jobs1), _median(jobs2)
    one_on_request, two_on_request = _median(request1), _median(request2)
    shown = [p.name for p in paths] if quick else [f"{p.name}/*.toml" for p in paths]
    return ExploreJobs(
        scenarios=tuple(shown),
        cases=max(cases),
        rounds=rounds,
        jobs1_seconds=tuple(jobs1),
        jobs2_seconds=tuple(jobs2),
        on_request_jobs1_seconds=tuple(request1),
        on_request_jobs2_seconds=tuple(request2),
        cold_jobs2_seconds=tuple(cold2),
        all_passed=all(passed),
        jobs1_median=one,
        jobs2_median=two,
        speedup=one / two,
        on_request_jobs1_median=one_on_request,
        on_request_jobs2_median=two_on_request,
        on_request_speedup=one_on_request / two_on_request,
        cold_jobs2_median=_median(cold2),
        cold_vs_default_jobs2=_median(cold2) / two,
        jobs1_cores=cores[0],
        jobs2_cores=cores[1],
        on_request_jobs1_cores=cores[2],
        on_request_jobs2_cores=cores[3],
        jobs1_cpu_ms_per_case=cpu_per_case[0],
        jobs2_cpu_ms_per_case=cpu_per_case[1],
    )


def _lab_cpu_seconds() -> float:
    """CPU time of this process and of its fork servers with every child
    they reaped: all the work of an exploration."""
    times = os.times()
    own = times.user + times.system + times.children_user + times.children_system
    return own + sum(server.cpu_seconds() for server in shared_servers())


# --- c. log reload and expected repair -------------------------------------------------


@dataclass(frozen=True, slots=True)
class ReloadShape:
    """The same measurement on the informational log of larger events
    (`faultlab.bench.synthlog`'s "documents" shape): no target, it shows how the
    throughput depends on the size of an event."""

    shape: str
    megabytes: float
    events: int
    bytes_per_event: float
    orjson_seconds: tuple[float, ...]
    json_seconds: tuple[float, ...]
    orjson_mb_per_s: float
    json_mb_per_s: float
    orjson_vs_json: float


@dataclass(frozen=True, slots=True)
class LogReload:
    """Read + parse + expected repair of one generated log, orjson vs json
    (the acceptance figures: the log of token-sized chunks), and the same on
    a log of larger events for information."""

    megabytes: float  # 10**6 bytes
    events: int
    turns: int
    rounds: int
    orjson_seconds: tuple[float, ...]
    json_seconds: tuple[float, ...]
    orjson_mb_per_s: float
    json_mb_per_s: float
    orjson_vs_json: float
    bytes_per_event: float
    documents: ReloadShape


def _reload_rounds(
    directory: Path, size: int, shape: str, rounds: int, say: Say
) -> tuple[SyntheticLog, list[float], list[float]]:
    """Generate a log of `shape`, then time read + parse + expected repair of
    it with orjson and with json, side by side; the log is deleted after."""
    tools = {
        spec.name: spec
        for spec in parse_scenario(
            'name = "bench"\n' + TOOLS_TOML + '[[turns]]\nuser = "u"\n[[turns.steps]]\ntext = "t"\n'
        ).tools
    }
    log = write_synthetic_log(directory / f"session-{shape}.jsonl", size, shape=shape)
    say(f"log reload: generated {log.size / 1e6:.1f} MB of {shape}, {log.events} events")

    def reload(loads: Loads) -> Callable[[], float]:
        def run() -> float:
            started = time.perf_counter()
            view = read_log_file(log.path, loads=loads)
            repair = expected_repair(view.events, tools)
            seconds = time.perf_counter() - started
            if view.problems or len(view.events) != log.events or len(repair.results) != 2:
                raise BenchError(f"the generated log did not read back cleanly: {view.path}")
            del view
            return seconds

        return run

    try:
        fast, slow = _side_by_side(rounds, [reload(orjson.loads), reload(json.loads)])
    finally:
        log.path.unlink(missing_ok=True)
    return log, fast, slow


def log_reload(quick: bool, *, say: Say = _quiet) -> LogReload:
    """Reload a ~100 MB session log (quick: ~4 MB) and compute its expected
    repair, with orjson and with the standard library's json; the same on a
    log of larger events of the same size, for information."""
    size = 4_000_000 if quick else 100_000_000
    # Five rounds: on this 2-core VM the same reload varies by +-20% from run
    # to run (other work, page faults of a fresh heap every time).
    rounds = 3 if quick else 5
    directory = Path(tempfile.mkdtemp(prefix="faultlab-bench-"))
    try:
        log, fast, slow = _reload_rounds(directory, size, "chunks", rounds, say)
        doc_log, doc_fast, doc_slow = _reload_rounds(directory, size, "documents", rounds, say)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    chunks = _figures("chunks", log, fast, slow)
    return LogReload(
        megabytes=chunks.megabytes,
        events=chunks.events,
        turns=log.turns,
        rounds=rounds,
        orjson_seconds=chunks.orjson_seconds,
        json_seconds=chunks.json_seconds,
        orjson_mb_per_s=chunks.orjson_mb_per_s,
        json_mb_per_s=chunks.json_mb_per_s,
        orjson_vs_json=chunks.orjson_vs_json,
        bytes_per_event=chunks.bytes_per_event,
        documents=_figures("documents", doc_log, doc_fast, doc_slow),
    )


def _figures(shape: str, log: SyntheticLog, fast: list[float], slow: list[float]) -> ReloadShape:
    """The throughput figures of one log's orjson (`fast`) and json rounds."""
    megabytes = log.size / 1e6
    fast_s, slow_s = _median(fast), _median(slow)
    return ReloadShape(
        shape=shape,
        megabytes=megabytes,
        events=log.events,
        bytes_per_event=log.size / log.events,
        orjson_seconds=tuple(fast),
        json_seconds=tuple(slow),
        orjson_mb_per_s=megabytes / fast_s,
        json_mb_per_s=megabytes / slow_s,
        orjson_vs_json=slow_s / fast_s,
    )


# --- d. checkpoint cost by policy ------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PolicyRun:
    """One workload under one policy: fsyncs of the session log during the
    turn (the backend's ``sync`` calls; the most of any round, as concurrent
    tool checkpoints may coalesce differently), flushes, the median turn time."""

    policy: str
    workload: str  # "stream" or "tools"
    units: int  # chunks streamed or tool calls made
    fsyncs: int
    fsyncs_per_round: tuple[int, ...]
    flushes: int
    seconds: float
    per_second: float


@dataclass(frozen=True, slots=True)
class CheckpointCost:
    """The policies on a short stream, a long stream and a turn of tool calls."""

    short_chunks: int
    long_chunks: int
    tool_calls: int
    rounds: int
    runs: tuple[PolicyRun, ...]
    semantic_vs_turn_only_stream: float
    semantic_vs_turn_only_tools: float
    semantic_fsyncs_short: int
    semantic_fsyncs_long: int
    semantic_fsyncs_constant: bool


def _stream_scenario(chunks: int) -> Scenario:
    return parse_scenario(
        f'name = "bench-stream"\n[[turns]]\nuser = "Explain."\n[[turns.steps]]\n'
        f'text = "token "\nrepeat = {chunks}\nchunks = {chunks}\n',
        path="<bench-stream>",
    )


def _tools_scenario(calls: int) -> Scenario:
    listed = ", ".join(f'{{ tool = "lookup", arguments = {{ key = {i} }} }}' for i in range(calls))
    return parse_scenario(
        'name = "bench-tools"\nmax_parallel_tools = 8\n'
        '[tools.lookup]\nread_only = true\nparallel_safe = true\nresult = "found"\n'
        '[[turns]]\nuser = "Look everything up."\n'
        f'[[turns.steps]]\ntext = "Looking up."\ntool_calls = [{listed}]\n'
        '[[turns.steps]]\ntext = "Done."\n',
        path="<bench-tools>",
    )


def _run_turn(scenario: Scenario, policy: str, directory: Path) -> tuple[float, int, int]:
    """Run the scenario's first turn in-process on real files: (seconds of the
    turn, fsyncs of the session log during it, flushes)."""
    backend = JsonlBackend(directory)
    loaded = backend.open(session_id="bench", create=True, resume=False)
    syncs = [0]
    sync = backend.sync

    def counting_sync() -> None:
        syncs[0] += 1
        sync()

    setattr(backend, "sync", counting_sync)  # noqa: B010 (a method, not a field)
    log = SessionLog(loaded.session_id, loaded.events)
    coordinator = PersistenceCoordinator(log, backend)
    host = Host()
    dispose = host.load(policy_plugin(policy, coordinator))
    ledger = WorldLedger(directory / "world-ledger.jsonl")
    agent = Agent(
        log=log,
        coordinator=coordinator,
        host=host,
        model=ScriptedModel(scenario),
        tools=ScriptedTools(scenario, ledger),
        pool_size=scenario.max_parallel_tools,
    )

    async def turn() -> float:
        started = time.perf_counter()
        await agent.run_turn(scenario.turns[0].user, script_turn=0, script_step=0)
        return time.perf_counter() - started

    try:
        seconds = asyncio.run(turn())
    finally:
        dispose()
        backend.close()
        ledger.close()
    return seconds, syncs[0], coordinator.flush_count


def checkpoint_cost(quick: bool, *, say: Say = _quiet) -> CheckpointCost:
    """fsyncs and throughput of semantic, turn-only and every-event on a 10-chunk
    and a 10,000-chunk answer (quick: 1,000) and on 100 tool calls (quick: 20)."""
    short, long, calls = (10, 1000, 20) if quick else (10, 10_000, 100)
    # Five rounds: a 10,000-chunk turn takes under 0.1 s, so one busy moment
    # on a shared machine moves a median of three (0.82x to 1.08x seen).
    rounds = 2 if quick else 5
    workloads = [
        ("stream", short, _stream_scenario(short)),
        ("stream", long, _stream_scenario(long)),
        ("tools", calls, _tools_scenario(calls)),
    ]
    directory = Path(tempfile.mkdtemp(prefix="faultlab-bench-"))
    counter = [0]
    try:
        sides: list[Callable[[], tuple[float, int, int]]] = []
        for _kind, _units, scenario in workloads:
            for policy in POLICIES:

                def run(
                    scenario: Scenario = scenario, policy: str = policy
                ) -> tuple[float, int, int]:
                    counter[0] += 1
                    return _run_turn(scenario, policy, directory / f"s{counter[0]}")

                sides.append(run)
        samples = _side_by_side(rounds, sides)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    runs: list[PolicyRun] = []
    index = 0
    for kind, units, _scenario in workloads:
        for policy in POLICIES:
            taken = samples[index]
            index += 1
            fsyncs = tuple(s[1] for s in taken)
            seconds = _median([s[0] for s in taken])
            flushes = max(s[2] for s in taken)
            runs.append(
                PolicyRun(
                    policy, kind, units, max(fsyncs), fsyncs, flushes, seconds, units / seconds
                )
            )
            say(f"checkpoint cost: {policy} {kind} x{units}: {max(fsyncs)} fsync(s)")

    def find(policy: str, kind: str, units: int) -> PolicyRun:
        return next(r for r in runs if (r.policy, r.workload, r.units) == (policy, kind, units))

    semantic_short = find("semantic", "stream", short).fsyncs_per_round
    semantic_long = find("semantic", "stream", long).fsyncs_per_round
    return CheckpointCost(
        short_chunks=short,
        long_chunks=long,
        tool_calls=calls,
        rounds=rounds,
        runs=tuple(runs),
        semantic_vs_turn_only_stream=find("semantic", "stream", long).per_second
        / find("turn-only", "stream", long).per_second,
        semantic_vs_turn_only_tools=find("semantic", "tools", calls).per_second
        / find("turn-only", "tools", calls).per_second,
        semantic_fsyncs_short=max(semantic_short),
        semantic_fsyncs_long=max(semantic_long),
        semantic_fsyncs_constant=len({*semantic_short, *semantic_long}) == 1,
    )


# --- all of them ---------------------------------------------------------------------


@dataclass(frozen=True)
class OfflineStates:
    """Offline power-loss/torn-write crash states checked per second vs real
    SIGKILL cases per second, measured in the same run (issue 5)."""

    figures: dict[str, Any]


def offline_states(quick: bool, *, say: Say = _quiet) -> OfflineStates:
    from faultlab.lab.faults.powerloss import offline_rate

    say("offline states: deriving and checking every power-loss and torn-write state")
    return OfflineStates(offline_rate(quick))


SECTIONS: dict[str, Callable[..., Any]] = {
    "crash_loop": crash_loop,
    "explore_jobs": explore_jobs,
    "log_reload": log_reload,
    "checkpoint_cost": checkpoint_cost,
    "offline_states": offline_states,
}


def _machine() -> dict[str, Any]:
    return {
        "cpus": os.cpu_count(),
        "usable_cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        # where the crash loop's and the explorations' children keep their
        # sessions (faultlab/lab/process/scratch.py); the checkpoint-cost runs use the
        # system temp dir, so that their fsyncs reach a disk
        "scratch": str(scratch_root()),
        "tempdir": tempfile.gettempdir(),
    }


def _load() -> float | None:
    """The 1-minute load average: how busy the machine was (not only with us)."""
    try:
        return os.getloadavg()[0]
    except OSError:
        return None


def run_sections(names: Sequence[str], quick: bool, *, say: Say = _quiet) -> dict[str, Any]:
    """Run the named benchmarks in order; one JSON-able dict."""
    unknown = [name for name in names if name not in SECTIONS]
    if unknown:
        raise ValueError(f"unknown benchmark(s) {unknown} (known: {', '.join(SECTIONS)})")
    started = time.perf_counter()
    report: dict[str, Any] = {
        "quick": quick,
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": _machine(),
    }
    before = _load()
    for name in names:
        say(f"{name}: running")
        gc.collect()
        report[name] = {**asdict(SECTIONS[name](quick, say=say)), "quick": quick}
    report["seconds"] = time.perf_counter() - started
    after = _load()
    if before is not None and after is not None:
        report["load"] = {"before": before, "after": after}
    report["acceptance"] = acceptance(report)
    return report


def run_all(quick: bool, *, say: Say = _quiet) -> dict[str, Any]:
    """All four benchmarks, with the machine they ran on and the acceptance checks."""
    return run_sections(list(SECTIONS), quick, say=say)


def script_main(names: Sequence[str], default_out: Path, argv: Sequence[str] | None = None) -> int:
    """The body of a `benchmarks/*.py` script: run `names`, print the table on
    stdout (progress on stderr), merge the results into the JSON file."""
    parser = argparse.ArgumentParser(description=f"faultlab benchmark: {', '.join(names)}")
    parser.add_argument("--quick", action="store_true", help="small sizes, few repetitions")
    parser.add_argument("--out", type=Path, default=default_out, help="JSON results file")
    args = parser.parse_args(argv)
    report = run_sections(names, args.quick, say=lambda text: print(text, file=sys.stderr))
    write_json(args.out, report, merge=True)
    print("\n".join(table(report)))
    print(f"results merged into {args.out}")
    return 0
