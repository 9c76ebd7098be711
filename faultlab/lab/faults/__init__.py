# How a target is hurt: SIGKILL and the crash phase every fault shares, the live
# faults, power loss and torn writes derived offline, corruption of the log;
# a fault as a value (`Fault`, fault.py) and the classic drive's table of them.
from __future__ import annotations

from faultlab.lab.faults.corruption import (
    CORRUPT_FAULT,
    Damage,
    damage_committed_line,
    plan_corrupt_cases,
    run_corrupt_case,
)
from faultlab.lab.faults.fault import (
    Fault,
    Planning,
    fault_named,
    parse_fault_names,
    plan_fault_cases,
)
from faultlab.lab.faults.live import LIVE_FAULTS
from faultlab.lab.faults.powerloss import (
    OFFLINE_CODES,
    check_state,
    crash_states,
    offline_rate,
    plan_power_cases,
    run_power_case,
)
from faultlab.lab.faults.powerstates import (
    PAGE,
    CrashState,
    FileState,
    UnsupportedTrace,
    derive_states,
    file_states,
    representative,
    states_at,
    unsupported,
)
from faultlab.lab.faults.sigkill import (
    Act,
    CrashPhase,
    ExtraChecks,
    crash_phase,
    recover,
    run_case,
)
from faultlab.lab.faults.table import CLASSIC_FAULTS, classic_fault

__all__ = [
    "CLASSIC_FAULTS",
    "CORRUPT_FAULT",
    "LIVE_FAULTS",
    "OFFLINE_CODES",
    "PAGE",
    "Act",
    "CrashPhase",
    "CrashState",
    "Damage",
    "ExtraChecks",
    "Fault",
    "FileState",
    "Planning",
    "UnsupportedTrace",
    "check_state",
    "classic_fault",
    "crash_phase",
    "crash_states",
    "damage_committed_line",
    "derive_states",
    "fault_named",
    "file_states",
    "offline_rate",
    "parse_fault_names",
    "plan_corrupt_cases",
    "plan_fault_cases",
    "plan_power_cases",
    "recover",
    "representative",
    "run_case",
    "run_corrupt_case",
    "run_power_case",
    "states_at",
    "unsupported",
]
