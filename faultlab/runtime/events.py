# Session log events: the value type, the event type names of log format v1
# (docs/log-format.md), and the error codes and texts the runtime writes into
# synthetic tool results.
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

__all__ = [
    "ABORTED_BEFORE_DISPATCH",
    "ASSISTANT_CHUNK",
    "ASSISTANT_MESSAGE",
    "CHECKPOINT_FAILED",
    "EVENT_TYPES",
    "FORMAT_VERSION",
    "REQUEST_HEADER",
    "STEP_END",
    "STEP_START",
    "TOOL_CALL",
    "TOOL_FAILED",
    "TOOL_NOT_STARTED",
    "TOOL_OUTCOME_UNKNOWN",
    "TOOL_RESULT",
    "TURN_END",
    "TURN_START",
    "USER_MESSAGE",
    "Event",
]

FORMAT_VERSION: Final = 1

TURN_START: Final = "turn/start"
USER_MESSAGE: Final = "user/message"
STEP_START: Final = "step/start"
STEP_END: Final = "step/end"
REQUEST_HEADER: Final = "request/header"
ASSISTANT_CHUNK: Final = "assistant/chunk"
ASSISTANT_MESSAGE: Final = "assistant/message"
TOOL_CALL: Final = "tool/call"
TOOL_RESULT: Final = "tool/result"
TURN_END: Final = "turn/end"

EVENT_TYPES: Final = frozenset(
    {
        TURN_START,
        USER_MESSAGE,
        STEP_START,
        STEP_END,
        REQUEST_HEADER,
        ASSISTANT_CHUNK,
        ASSISTANT_MESSAGE,
        TOOL_CALL,
        TOOL_RESULT,
        TURN_END,
    }
)

# Error codes of tool results the runtime writes itself.
TOOL_NOT_STARTED: Final = "TOOL_NOT_STARTED"
TOOL_OUTCOME_UNKNOWN: Final = "TOOL_OUTCOME_UNKNOWN"
ABORTED_BEFORE_DISPATCH: Final = "ABORTED_BEFORE_DISPATCH"
CHECKPOINT_FAILED: Final = "CHECKPOINT_FAILED"
TOOL_FAILED: Final = "TOOL_FAILED"


@dataclass(frozen=True, slots=True)
class Event:
    """One line of the session log after the header."""

    seq: int
    type: str
    time: float
    data: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {"seq": self.seq, "type": self.type, "time": self.time, "data": self.data}
