# The drives: one implementation of the `Drive` protocol per kind of target
# (protocol.py), registered by name (registry.py).  A drive runs the
# fault-free reference, plans cases, runs one case, parses a kill point as a
# user writes it and kills what it started; everything else (case order,
# shards, selection, interruption, the coverage case, the report) is the
# engine's (faultlab/lab/campaigns/engine.py), once for every drive.
from __future__ import annotations

from faultlab.lab.drives.protocol import COVERAGE, Drive, PlanContext
from faultlab.lab.drives.registry import (
    DRIVE_NAMES,
    drive_accepts,
    drive_faults,
    drives_running,
    kill_everything,
    make_drive,
)

__all__ = [
    "COVERAGE",
    "DRIVE_NAMES",
    "Drive",
    "PlanContext",
    "drive_accepts",
    "drive_faults",
    "drives_running",
    "kill_everything",
    "make_drive",
]
