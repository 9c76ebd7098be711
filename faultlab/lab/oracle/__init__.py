# What must hold after a fault: the expected repair, history validity, every
# guarantee check (the ACP-visible ones too) and the stable violation codes.
from __future__ import annotations

from faultlab.lab.oracle.acp import (
    Item,
    check_cancel,
    check_guidance,
    check_replay,
    conversation_from_log,
    conversation_from_updates,
    updates_between,
)
from faultlab.lab.oracle.case import (
    Case,
    CaseResult,
    Verdict,
)
from faultlab.lab.oracle.checks import (
    Observation,
    check_case,
    check_coverage,
    event_key,
)
from faultlab.lab.oracle.codes import (
    GUARANTEES,
    Violation,
    explain,
)
from faultlab.lab.oracle.expected import (
    TOOL_NOT_STARTED,
    TOOL_OUTCOME_UNKNOWN,
    ExpectedRepair,
    ExpectedResult,
    after_repair,
    expected_repair,
)
from faultlab.lab.oracle.live import (
    check_aborted,
    check_fail_closed,
    check_graceful_close,
    request_after_post_step,
)
from faultlab.lab.oracle.validity import (
    PROVIDER_INVALID_HISTORY,
    HistoryProblem,
    check_history,
)

__all__ = [
    "GUARANTEES",
    "PROVIDER_INVALID_HISTORY",
    "TOOL_NOT_STARTED",
    "TOOL_OUTCOME_UNKNOWN",
    "Case",
    "CaseResult",
    "ExpectedRepair",
    "ExpectedResult",
    "HistoryProblem",
    "Item",
    "Observation",
    "Verdict",
    "Violation",
    "after_repair",
    "check_aborted",
    "check_cancel",
    "check_case",
    "check_coverage",
    "check_fail_closed",
    "check_graceful_close",
    "check_guidance",
    "check_history",
    "check_replay",
    "conversation_from_log",
    "conversation_from_updates",
    "event_key",
    "expected_repair",
    "explain",
    "request_after_post_step",
    "updates_between",
]
