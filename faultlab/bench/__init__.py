# The benchmarks: one function per figure, each measuring its pair side by side
# in one run, the report of their figures next to the acceptance targets, and
# the synthetic log the reload benchmark reads.
from __future__ import annotations

from faultlab.bench.measure import (
    SECTIONS,
    BenchError,
    CheckpointCost,
    CrashLoop,
    ExploreJobs,
    LogReload,
    PolicyRun,
    ReloadShape,
    acceptance,
    checkpoint_cost,
    crash_loop,
    explore_jobs,
    log_reload,
    run_all,
    run_sections,
    script_main,
    table,
    write_json,
)
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
