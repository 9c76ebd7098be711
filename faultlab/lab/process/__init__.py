# How the lab runs a target: one handle for every process any drive starts,
# contained whether exec'd under its supervisor or forked by a fork server
# (tree.py, reaper.py, the fork servers' client forkserver.py) and kept in
# one registry of live processes (live.py); the probe's children (spawn.py),
# targets, scratch dirs, the environment and the fault-free reference run
# (reference.py) that later runs must not drift from (drift.py).
# Every name is imported when first used (exports.py); `drift` is not
# re-exported: it is also a submodule's name.
from __future__ import annotations

from typing import TYPE_CHECKING

from faultlab.lab.process.exports import exports_on_use

if TYPE_CHECKING:
    from faultlab.lab.process.drift import normalized
    from faultlab.lab.process.forkserver import (
        RUNTIME_SERVER,
        ForkServer,
        ForkServerError,
        shared_server,
        shared_servers,
    )
    from faultlab.lab.process.reference import (
        LabOptions,
        Reference,
        make_child,
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
        leftovers,
    )

__all__ = [
    "LEDGER_NAME",
    "LOG_NAME",
    "MIN_RAM_FREE",
    "RAM_DIRS",
    "RUNTIME_SERVER",
    "Child",
    "ChildExit",
    "ChildHung",
    "ContainedProcess",
    "ForkServer",
    "ForkServerError",
    "LabOptions",
    "Mode",
    "Reference",
    "Target",
    "TreeError",
    "bundled_scenarios",
    "check_executable",
    "command_target",
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

_NAMES = {  # submodule: the names it defines that the package re-exports
    "drift": "normalized",
    "forkserver": "RUNTIME_SERVER ForkServer ForkServerError shared_server shared_servers",
    "reference": (
        "LabOptions Reference make_child read_bytes read_ledger run_reference "
        "run_to_exit slug store_of usable_cpus write_trace"
    ),
    "scratch": "MIN_RAM_FREE RAM_DIRS scratch_root",
    "spawn": "Child ChildExit ChildHung kill_all signal_group trimmed_environment",
    "target": (
        "LEDGER_NAME LOG_NAME Mode Target bundled_scenarios check_executable "
        "command_target reference_target"
    ),
    "tree": "ContainedProcess TreeError leftovers",
}
__getattr__ = exports_on_use(__name__, _NAMES)
