# The benchmarks of issue 4, one module per figure, each measuring its pair
# side by side in one run: `crashloop`, `explorejobs`, `logreload`,
# `checkpointcost` and `offline` (issue 5's offline states), over `common`
# (interleaved rounds, medians).  `runner` runs them by section name,
# `report` sets their figures next to the acceptance targets (table, JSON),
# `synthlog` writes the log the reload figure reads.  This package re-exports
# the public names, which `faultlab bench` and `benchmarks/*.py` call.
from __future__ import annotations

from faultlab.bench.checkpointcost import CheckpointCost, PolicyRun, checkpoint_cost
from faultlab.bench.common import BenchError
from faultlab.bench.crashloop import CrashLoop, crash_loop
from faultlab.bench.explorejobs import ExploreJobs, explore_jobs
from faultlab.bench.logreload import LogReload, ReloadShape, log_reload
from faultlab.bench.report import acceptance, table, write_json
from faultlab.bench.runner import SECTIONS, run_all, run_sections, script_main
from faultlab.bench.synthlog import (
    SHAPES,
    TOOLS_TOML,
    SyntheticLog,
    write_synthetic_log,
)

__all__ = [
    "SECTIONS",
    "SHAPES",
    "TOOLS_TOML",
    "BenchError",
    "CheckpointCost",
    "CrashLoop",
    "ExploreJobs",
    "LogReload",
    "PolicyRun",
    "ReloadShape",
    "SyntheticLog",
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
    "write_synthetic_log",
]
