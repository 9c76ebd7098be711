# How the lab runs a target: child processes in their own groups, the fork-server
# client, targets, scratch dirs, the environment, the fault-free reference run,
# and a black-box agent's whole process tree, contained (tree.py, reaper.py).
from __future__ import annotations

from faultlab.lab.process.forkserver import (
    ForkedProcess,
    ForkServer,
    ForkServerError,
    shared_server,
    shared_servers,
)
from faultlab.lab.process.reference import (
    LabOptions,
    Reference,
    drift,
    make_child,
    normalized,
    read_bytes,
    read_ledger,
    run_reference,
    run_to_exit,
    slug,
    store_of,
    usable_cpus,
    write_trace,
)
from faultlab.lab.process.scratch import (
    MIN_RAM_FREE,
    RAM_DIRS,
    scratch_root,
)
from faultlab.lab.process.spawn import (
    Child,
    ChildExit,
    ChildHung,
    kill_all,
    signal_group,
    trimmed_environment,
)
from faultlab.lab.process.target import (
    LEDGER_NAME,
    LOG_NAME,
    Mode,
    Target,
    bundled_scenarios,
    check_executable,
    command_target,
    reference_target,
)
from faultlab.lab.process.tree import (
    ContainedProcess,
    TreeError,
    close_all,
    leftovers,
)

__all__ = [
    "LEDGER_NAME",
    "LOG_NAME",
    "MIN_RAM_FREE",
    "RAM_DIRS",
    "Child",
    "ChildExit",
    "ChildHung",
    "ContainedProcess",
    "ForkServer",
    "ForkServerError",
    "ForkedProcess",
    "LabOptions",
    "Mode",
    "Reference",
    "Target",
    "TreeError",
    "bundled_scenarios",
    "check_executable",
    "close_all",
    "command_target",
    "drift",
    "kill_all",
    "leftovers",
    "make_child",
    "normalized",
    "read_bytes",
    "read_ledger",
    "reference_target",
    "run_reference",
    "run_to_exit",
    "scratch_root",
    "shared_server",
    "shared_servers",
    "signal_group",
    "slug",
    "store_of",
    "trimmed_environment",
    "usable_cpus",
    "write_trace",
]
