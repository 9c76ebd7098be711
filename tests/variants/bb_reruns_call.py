"""Black-box variant: on resume the agent sends the interrupted call to the tool server again.

Bug imitated: "at-least-once" resume. A durable `tool/call` without a result
is not answered TOOL_OUTCOME_UNKNOWN: the agent re-sends it to the MCP server
with the same arguments and records the real result. For a non-idempotent
tool whose effect was applied before the kill, the card is charged twice.

The oracle must report: SIDE_EFFECT_DUPLICATED (G6).
Shows at: tool/applied (and tool/replied) then resume.
"""

from __future__ import annotations

from typing import Any

from _common import run_httpagent

from faultlab.runtime import app
from faultlab.runtime.calls import ToolCall
from faultlab.runtime.cancel import CancelToken
from faultlab.runtime.dispatch import _result_data
from faultlab.runtime.events import TOOL_OUTCOME_UNKNOWN, TOOL_RESULT
from faultlab.runtime.httpagent import loop

_reference = loop.commit_repair


async def rerunning_repair(log: Any, coordinator: Any, tools: Any, say: Any) -> int:
    for action in app.plan_repair(log.events, lambda _name: None):
        if action.data.get("error", {}).get("code") != TOOL_OUTCOME_UNKNOWN:
            continue
        event = log.events[action.data["sourceEventSeqs"][0]]  # the durable tool/call
        d = event.data
        call = ToolCall(d["callId"], d["name"], d["arguments"], d["turn"], d["step"], event.seq,
                        CancelToken())  # fmt: skip
        result = await tools.run(call, None)  # sent to the MCP server again
        log.append(TOOL_RESULT, _result_data(call, result, [event.seq]))
    return await _reference(log, coordinator, tools, say)


loop.commit_repair = rerunning_repair  # type: ignore[assignment]

if __name__ == "__main__":
    run_httpagent()
