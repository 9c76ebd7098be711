# Framework apps crash-tested with their own persistence (`--app`): the
# LangGraph drive and its reader of persisted threads.  Nothing here imports
# a framework at import time; the child process (lgchild) does.
from __future__ import annotations

from faultlab.lab.apps.drive import (
    APP_FAULTS,
    DURABILITIES,
    RESUME_STYLES,
    AppOptions,
    parse_app,
    plan_app_cases,
    run_app_case,
    run_app_reference,
)

__all__ = [
    "APP_FAULTS",
    "DURABILITIES",
    "RESUME_STYLES",
    "AppOptions",
    "parse_app",
    "plan_app_cases",
    "run_app_case",
    "run_app_reference",
]
