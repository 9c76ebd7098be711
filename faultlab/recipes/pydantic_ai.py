# The pydantic-ai repair: before an app runs its agent on a stored history
# after a crash, answer every tool call the history leaves unanswered, so
# the agent neither runs a call that may have taken effect again (which
# `agent.run(None, message_history=...)` does) nor refuses the user's next
# message (which `agent.run(prompt, ...)` does on an unanswered call).
#
# The evidence pydantic-ai gives: a ToolCallPart is recorded in the model's
# response before its call is dispatched, and nothing is recorded when the
# body starts; the calls of a complete response are dispatched by the very
# next node.  So a dangling call of a complete response may have run
# (TOOL_OUTCOME_UNKNOWN).  The calls of a response marked `interrupted` (cut
# off, or one the run stopped before acting on) are never dispatched by
# pydantic-ai (TOOL_NOT_STARTED).  pydantic-ai's own `repair_messages`
# answers both alike ("interrupted"), which does not tell them apart.
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelRequestPart,
    ModelResponse,
    RetryPromptPart,
    ToolCallPart,
    ToolReturnPart,
)

# The codes and texts are shared with the other recipes (faultlab/recipes/guidance.py).
from faultlab.recipes.guidance import (
    TOOL_NOT_STARTED,
    TOOL_OUTCOME_UNKNOWN,
    RepairedCall,
    guidance,
)

__all__ = [
    "REPAIR_METADATA_KEY",
    "TOOL_NOT_STARTED",
    "TOOL_OUTCOME_UNKNOWN",
    "RepairedCall",
    "guidance",
    "repair_dangling_calls",
]

# Set in the metadata of each return the recipe writes, with its code.
REPAIR_METADATA_KEY = "faultlab_repair"


def _answered(messages: Sequence[ModelMessage]) -> set[str]:
    return {p.tool_call_id for m in messages if isinstance(m, ModelRequest) for p in m.parts
            if isinstance(p, ToolReturnPart | RetryPromptPart) and p.tool_name}  # fmt: skip


def repair_dangling_calls(
    messages: Sequence[ModelMessage], *, safe_tools: Iterable[str] = (),
) -> tuple[list[ModelMessage], list[RepairedCall]]:  # fmt: skip
    """The history with each unanswered tool call answered (a failed
    ToolReturnPart carrying the code and the guidance, placed in the request
    that follows its response, or in a new one), and what was answered.  A
    consistent history comes back unchanged with nothing answered, so an app
    can call it on every load.  `safe_tools` are the read-only or idempotent
    tools whose retry the guidance may allow."""
    answered = _answered(messages)
    safe = set(safe_tools)
    out: list[ModelMessage] = []
    repaired: list[RepairedCall] = []
    owed: list[ModelRequestPart] = []
    for message in messages:
        if isinstance(message, ModelResponse):
            if owed:
                out.append(ModelRequest(parts=owed))
                owed = []
            out.append(message)
            code = TOOL_NOT_STARTED if message.state == "interrupted" else TOOL_OUTCOME_UNKNOWN
            for call in message.parts:
                if not isinstance(call, ToolCallPart) or call.tool_call_id in answered:
                    continue
                repaired.append(RepairedCall(call.tool_call_id, call.tool_name, code))
                text = guidance(code, call.tool_name, call.tool_call_id,
                                safe_to_retry=call.tool_name in safe)  # fmt: skip
                owed.append(ToolReturnPart(call.tool_name, text, tool_call_id=call.tool_call_id,
                                           metadata={REPAIR_METADATA_KEY: code},
                                           outcome="failed"))  # fmt: skip
        elif owed and isinstance(message, ModelRequest):
            out.append(replace(message, parts=[*owed, *message.parts]))
            owed = []
        else:
            out.append(message)
    if owed:
        out.append(ModelRequest(parts=owed))
    if not repaired:
        return list(messages), []
    return out, repaired
