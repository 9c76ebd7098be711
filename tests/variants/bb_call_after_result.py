"""Black-box variant: the agent records a tool call only once the tool has returned.

Bug imitated: "log the call together with its result". The dispatcher sends
the call to the MCP server first and appends `tool/call` after the result
came back, and the tool checkpoint (its flush) moves along with it, after the
call. While the tool runs, nothing on disk says it was asked for (not even the
assistant message), so a SIGKILL in the tool body loses the intent: the
resumed model sees no call and charges the card a second time.

The oracle must report: TOOL_INTENT_LOST (a call that reached the tool server
is missing from the resumed history) and SIDE_EFFECT_DUPLICATED (G6).
Shows at: tool/applied (kill in charge_card's body, after its ledger line).
"""

from __future__ import annotations

from typing import Any

from _common import edit_semantic_policy, run_httpagent

from faultlab.runtime.calls import ToolCall, ToolResult
from faultlab.runtime.dispatch import ToolDispatcher
from faultlab.runtime.events import TOOL_CALL
from faultlab.runtime.host import TOOLS_EXECUTE, Next
from faultlab.runtime.persistence import PersistenceCoordinator


async def _run_then_record(
    self: ToolDispatcher, turn: int, step: int, call_id: str, name: str,
    arguments: dict[str, Any], parent_call_id: str | None,
) -> ToolResult:  # fmt: skip
    call = ToolCall(call_id, name, arguments, turn, step, -1, self._cancel, parent_call_id)
    result: ToolResult = await self._host.call(TOOLS_EXECUTE, call, self._execute_body)
    data = {"turn": turn, "step": step, "callId": call_id, "name": name, "arguments": arguments}
    self._call_seqs[call_id] = self._append(TOOL_CALL, data).seq  # only now
    return result


def _flush_after_call(coordinator: PersistenceCoordinator) -> dict[str, Any]:
    async def checkpoint(call: ToolCall, next_: Next) -> ToolResult:
        result: ToolResult = await next_(call)
        await coordinator.flush()  # the call and its result, together
        return result

    return {TOOLS_EXECUTE: lambda _reference: checkpoint}


ToolDispatcher._run = _run_then_record  # type: ignore[method-assign]
edit_semantic_policy(_flush_after_call)

if __name__ == "__main__":
    run_httpagent()
