# Issue 4's checkpoint-cost figure: fsyncs, flushes and throughput of the
# checkpoint policies on a short stream, a long stream and a turn of tool
# calls, the reference runtime run in-process on real files (the only figure
# that drives the runtime directly rather than through the lab).  Measurement
# only, no verdict (`faultlab.bench.report`).
from __future__ import annotations

import asyncio
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from faultlab.bench.common import Say, median, quiet, side_by_side
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

__all__ = ["CheckpointCost", "PolicyRun", "checkpoint_cost"]

POLICIES = ("semantic", "turn-only", "every-event")


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


def checkpoint_cost(quick: bool, *, say: Say = quiet) -> CheckpointCost:
    """fsyncs and throughput of semantic, turn-only and every-event on a 10-chunk
    and a 10,000-chunk answer (quick: 1,000) and on 100 tool calls (quick: 20)."""
    short, long, calls = (10, 1000, 20) if quick else (10, 10_000, 100)
    # Five rounds: a 10,000-chunk turn takes under 0.1 s, so one busy moment
    # on a shared machine moves a median of three (benchmarks/README.md).
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
        samples = side_by_side(rounds, sides)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    runs: list[PolicyRun] = []
    index = 0
    for kind, units, _scenario in workloads:
        for policy in POLICIES:
            taken = samples[index]
            index += 1
            fsyncs = tuple(s[1] for s in taken)
            seconds = median([s[0] for s in taken])
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
