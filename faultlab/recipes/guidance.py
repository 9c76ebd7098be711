# The words every recipe answers a repaired tool call with, whatever the
# framework: one code (TOOL_NOT_STARTED or TOOL_OUTCOME_UNKNOWN) and the
# guidance the model reads.  Kept here, free of any framework import, so the
# LangGraph and pydantic-ai recipes say exactly the same thing.
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["TOOL_NOT_STARTED", "TOOL_OUTCOME_UNKNOWN", "RepairedCall", "guidance"]

TOOL_NOT_STARTED = "TOOL_NOT_STARTED"
TOOL_OUTCOME_UNKNOWN = "TOOL_OUTCOME_UNKNOWN"


@dataclass(frozen=True, slots=True)
class RepairedCall:
    """One call the repair answered, and with which code."""

    call_id: str
    name: str
    code: str


def guidance(code: str, name: str, call_id: str, *, safe_to_retry: bool = False) -> str:
    """The text the model reads for a repaired call."""
    if code == TOOL_NOT_STARTED:
        return (f"{TOOL_NOT_STARTED}: tool call {name} ({call_id}) was never started; the app "
                "stopped before dispatching it, so it had no effect. Call it again if it is "
                "still needed.")  # fmt: skip
    head = (f"{TOOL_OUTCOME_UNKNOWN}: the outcome of tool call {name} ({call_id}) is unknown; "
            "the app stopped after dispatching it and before its result was recorded.")
    if safe_to_retry:
        return f"{head} The tool is read-only or idempotent, so calling it again is safe."
    return (f"{head} It may have taken effect. Do not retry it blindly: verify the external "
            "state first or ask the user.")  # fmt: skip
