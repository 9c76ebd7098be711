# How a black-box agent is crash-tested: the agent unmodified, pointed at
# faultlab's model and tool servers, killed at what those servers observe;
# the drive's faults are the table in faults.py.
from __future__ import annotations

from faultlab.lab.blackbox.drive import (
    AgentKill,
    BlackboxOptions,
    run_blackbox_case,
    run_blackbox_reference,
)
from faultlab.lab.blackbox.faults import BLACKBOX_FAULTS, agent_fault, plan_blackbox_cases

__all__ = [
    "BLACKBOX_FAULTS",
    "AgentKill",
    "BlackboxOptions",
    "agent_fault",
    "plan_blackbox_cases",
    "run_blackbox_case",
    "run_blackbox_reference",
]
