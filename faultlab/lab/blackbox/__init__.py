# How a black-box agent is crash-tested: the agent unmodified, pointed at
# faultlab's model and tool servers, killed at what those servers observe.
from __future__ import annotations

from faultlab.lab.blackbox.drive import (
    BLACKBOX_FAULTS,
    BlackboxOptions,
    plan_blackbox_cases,
    run_blackbox_case,
    run_blackbox_reference,
)

__all__ = [
    "BLACKBOX_FAULTS",
    "BlackboxOptions",
    "plan_blackbox_cases",
    "run_blackbox_case",
    "run_blackbox_reference",
]
