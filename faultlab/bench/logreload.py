# Issue 4's reload figure: read + parse + expected repair of a generated
# session log (`faultlab.bench.synthlog`), orjson vs the standard library's
# json, on the acceptance log of token-sized chunks and, for information, on a
# log of larger events.  Measurement only, no verdict (`faultlab.bench.report`).
from __future__ import annotations

import json
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import orjson

from faultlab.bench.common import BenchError, Say, median, quiet, side_by_side
from faultlab.bench.synthlog import TOOLS_TOML, SyntheticLog, write_synthetic_log
from faultlab.lab.oracle.expected import expected_repair
from faultlab.lab.read.jsonl import read_log_file
from faultlab.lab.read.lines import Loads
from faultlab.scenario import parse_scenario

__all__ = ["LogReload", "ReloadShape", "log_reload"]


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
        fast, slow = side_by_side(rounds, [reload(orjson.loads), reload(json.loads)])
    finally:
        log.path.unlink(missing_ok=True)
    return log, fast, slow


def log_reload(quick: bool, *, say: Say = quiet) -> LogReload:
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
    fast_s, slow_s = median(fast), median(slow)
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
