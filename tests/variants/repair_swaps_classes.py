"""Variant: crash repair swaps TOOL_NOT_STARTED and TOOL_OUTCOME_UNKNOWN.

Bug imitated: the classification test is inverted ("has a durable tool/call"
read as "was never dispatched"), so a call whose body may have run is
reported as never started (and the model retries a possibly applied effect),
while a call that never started is reported as unknown. Texts and retry
classes follow the wrong code, as a consistent but wrong repair would.

The oracle must report: REPAIR_MISCLASSIFIED (G3).
Shows at: deploy-careful.toml tool/durable#1 then resume (TOOL_NOT_STARTED
for a durable call); mixed-parallel.toml tool/durable#1 shows both swaps.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from _common import Planner, run, wrap_plan_repair

from faultlab.runtime.events import (
    ASSISTANT_MESSAGE,
    TOOL_CALL,
    TOOL_NOT_STARTED,
    TOOL_OUTCOME_UNKNOWN,
    Event,
)
from faultlab.runtime.history import tool_calls_of
from faultlab.runtime.repair import RepairAction, SafetyLookup, guidance

SWAP = {TOOL_NOT_STARTED: TOOL_OUTCOME_UNKNOWN, TOOL_OUTCOME_UNKNOWN: TOOL_NOT_STARTED}


def swapped(plan: Planner, events: Sequence[Event], safe: SafetyLookup) -> Iterator[RepairAction]:
    names = {e.data["callId"]: e.data["name"] for e in events if e.type == TOOL_CALL}
    for event in events:
        if event.type == ASSISTANT_MESSAGE:
            names.update({b["id"]: b["name"] for b in tool_calls_of(event.data["message"])})
    for action in plan(events, safe):
        code = (action.data.get("error") or {}).get("code")
        if code in SWAP:
            call_id = action.data["callId"]
            name = names[call_id]
            text, retry = guidance(SWAP[code], name, call_id, safe(name))
            error = {"code": SWAP[code], "message": text, "retry": retry}
            action = RepairAction(action.type, {**action.data, "content": text, "error": error})
        yield action


wrap_plan_repair(swapped)

if __name__ == "__main__":
    run()
