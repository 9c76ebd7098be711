# Framework apps crash-tested with their own persistence (`--app`): the
# LangGraph and pydantic-ai drive, its fault table (faults.py) and the
# readers of persisted state.
# Nothing here imports a framework at import time; the child processes
# (lgchild, pachild) do.
from __future__ import annotations

from faultlab.lab.apps.drive import (
    DURABILITIES,
    FRAMEWORKS,
    MODES,
    RESUME_STYLES,
    SAVE_POLICIES,
    AppOptions,
    AppRig,
    parse_app,
    plan_app_points,
    run_app_reference,
)
from faultlab.lab.apps.faults import APP_FAULTS, app_fault, run_app_case

__all__ = [
    "APP_FAULTS",
    "DURABILITIES",
    "FRAMEWORKS",
    "MODES",
    "RESUME_STYLES",
    "SAVE_POLICIES",
    "AppOptions",
    "AppRig",
    "app_fault",
    "parse_app",
    "plan_app_points",
    "run_app_case",
    "run_app_reference",
]
