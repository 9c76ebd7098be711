# Framework apps crash-tested with their own persistence (`--app`): the
# LangGraph and pydantic-ai drive and their readers of persisted state.
# Nothing here imports a framework at import time; the child processes
# (lgchild, pachild) do.
from __future__ import annotations

from faultlab.lab.apps.drive import (
    APP_FAULTS,
    DURABILITIES,
    FRAMEWORKS,
    MODES,
    RESUME_STYLES,
    SAVE_POLICIES,
    AppOptions,
    parse_app,
    plan_app_cases,
    run_app_case,
    run_app_reference,
)

__all__ = [
    "APP_FAULTS",
    "DURABILITIES",
    "FRAMEWORKS",
    "MODES",
    "RESUME_STYLES",
    "SAVE_POLICIES",
    "AppOptions",
    "parse_app",
    "plan_app_cases",
    "run_app_case",
    "run_app_reference",
]
