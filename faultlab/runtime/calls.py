# The values that travel through the `tools/execute` chain: a tool call with
# its context, and the result a body (or a checkpoint refusing to run it)
# returns.
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from faultlab.runtime.cancel import CancelToken
from faultlab.runtime.events import ABORTED_BEFORE_DISPATCH, CHECKPOINT_FAILED

__all__ = ["ToolCall", "ToolResult", "aborted_before_dispatch", "checkpoint_failed"]


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One dispatch of a tool: top-level (from the model) or nested."""

    call_id: str
    name: str
    arguments: dict[str, Any]
    turn: int
    step: int
    call_seq: int
    cancel: CancelToken
    parent_call_id: str | None = None

    @property
    def nested(self) -> bool:
        return self.parent_call_id is not None


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What a tool call produced (or why it was not run)."""

    content: str
    is_error: bool = False
    error_code: str | None = None
    body_started: bool = True

    def error(self) -> dict[str, str] | None:
        if self.error_code is None:
            return None
        return {"code": self.error_code, "message": self.content}


def aborted_before_dispatch(call: ToolCall) -> ToolResult:
    """The canonical result of a call cancelled before its body started."""
    text = (
        f"Tool call {call.name} ({call.call_id}) was not started: the turn was cancelled "
        "before it was dispatched. It had no effect."
    )
    return ToolResult(text, is_error=True, error_code=ABORTED_BEFORE_DISPATCH, body_started=False)


def checkpoint_failed(call: ToolCall, reason: str) -> ToolResult:
    """The result of a call whose checkpoint could not be made durable."""
    text = (
        f"Tool call {call.name} ({call.call_id}) was not started: the session could not be "
        f"saved before running it ({reason}). It had no effect."
    )
    return ToolResult(text, is_error=True, error_code=CHECKPOINT_FAILED, body_started=False)
