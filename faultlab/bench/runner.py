# The benchmark sections by name and running them: `run_sections` and
# `run_all` gather the figures, the machine and its load, and the acceptance
# checks into one JSON-able dict; `script_main` is the body of every
# `benchmarks/*.py` script.  It imports every figure's module (none imports
# it); `faultlab bench` and the scripts are thin callers.
from __future__ import annotations

import argparse
import gc
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from faultlab.bench.checkpointcost import checkpoint_cost
from faultlab.bench.common import Say, quiet
from faultlab.bench.crashloop import crash_loop
from faultlab.bench.doublecrash import double_crash
from faultlab.bench.explorejobs import explore_jobs
from faultlab.bench.logreload import log_reload
from faultlab.bench.offline import offline_states
from faultlab.bench.report import acceptance, table, write_json
from faultlab.bench.syscalltrace import syscall_trace
from faultlab.lab.process.scratch import scratch_root

__all__ = ["SECTIONS", "run_all", "run_sections", "script_main"]


SECTIONS: dict[str, Callable[..., Any]] = {
    "crash_loop": crash_loop,
    "explore_jobs": explore_jobs,
    "log_reload": log_reload,
    "checkpoint_cost": checkpoint_cost,
    "offline_states": offline_states,
    "double_crash": double_crash,
    "syscall_trace": syscall_trace,
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


def run_sections(names: Sequence[str], quick: bool, *, say: Say = quiet) -> dict[str, Any]:
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


def run_all(quick: bool, *, say: Say = quiet) -> dict[str, Any]:
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
