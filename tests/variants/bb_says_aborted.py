"""Black-box variant: on resume the agent tells the model an interrupted call was aborted.

Bug imitated: misclassification. Crash repair answers a durable `tool/call`
that has no result as "aborted, it had no effect, call it again if needed"
(the text of a call cancelled before dispatch) instead of TOOL_OUTCOME_UNKNOWN
with its verify-before-retrying guidance. The call reached the MCP server and
may have charged the card; a model that believes the text charges it again.

The oracle must report: the classification code (a call whose effect was
applied presented as not started/aborted) and SIDE_EFFECT_DUPLICATED (G6)
with a retry-prone model.
Shows at: tool/applied (and tool/replied) then resume.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from _common import Planner, run_httpagent, wrap_plan_repair

from faultlab.runtime.events import ABORTED_BEFORE_DISPATCH, TOOL_OUTCOME_UNKNOWN, Event
from faultlab.runtime.repair import RepairAction, SafetyLookup


def says_aborted(plan: Planner, events: Sequence[Event], safe: SafetyLookup) -> list[RepairAction]:
    actions = []
    for action in plan(events, safe):
        if action.data.get("error", {}).get("code") == TOOL_OUTCOME_UNKNOWN:
            text = (
                f"Tool call {action.data['callId']} was aborted: the session stopped before it "
                "completed. It had no effect. Call it again if it is still needed."
            )
            error = {"code": ABORTED_BEFORE_DISPATCH, "message": text, "retry": "safe"}
            action = replace(action, data={**action.data, "content": text, "error": error})
        actions.append(action)
    return actions


wrap_plan_repair(says_aborted)

if __name__ == "__main__":
    run_httpagent()
