"""Variant: crash repair answers every unanswered call TOOL_NOT_STARTED.

Bug imitated: one class for every dangling call. The "sanitize history"
step many runtimes run before the next request answers each tool call
without a result with the same synthetic "the tool was not run" message,
whether or not its `tool/call` was durable (its body may have run). The
model is told a payment that may have gone through never happened, and
charges again.

The oracle must report: REPAIR_MISCLASSIFIED (G3).
Shows at: payment.toml tool/durable#1 then resume: the durable
charge_card call is answered TOOL_NOT_STARTED, citing the assistant message.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from _common import Planner, run, wrap_plan_repair

from faultlab.runtime.events import (
    ASSISTANT_MESSAGE,
    TOOL_NOT_STARTED,
    TOOL_OUTCOME_UNKNOWN,
    Event,
)
from faultlab.runtime.history import tool_calls_of
from faultlab.runtime.repair import RepairAction, SafetyLookup, guidance


def not_started(
    plan: Planner, events: Sequence[Event], safe: SafetyLookup
) -> Iterator[RepairAction]:
    asked = {
        block["id"]: (block["name"], event.seq)
        for event in events
        if event.type == ASSISTANT_MESSAGE
        for block in tool_calls_of(event.data["message"])
    }
    for action in plan(events, safe):
        code = (action.data.get("error") or {}).get("code")
        if code == TOOL_OUTCOME_UNKNOWN and action.data["callId"] in asked:
            call_id = action.data["callId"]
            name, message_seq = asked[call_id]
            text, retry = guidance(TOOL_NOT_STARTED, name, call_id, None)
            error = {"code": TOOL_NOT_STARTED, "message": text, "retry": retry}
            data = {**action.data, "content": text, "error": error,
                    "sourceEventSeqs": [message_seq]}  # fmt: skip
            action = RepairAction(action.type, data)
        yield action


wrap_plan_repair(not_started)

if __name__ == "__main__":
    run()
