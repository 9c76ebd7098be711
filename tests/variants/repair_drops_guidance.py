"""Variant: crash repair drops the retry guidance.

Bug imitated: the synthetic TOOL_OUTCOME_UNKNOWN result says only that the
outcome is unknown; the retry class (`error.retry`) and the instruction
("do not retry blindly: verify the external state or ask the user") were
lost, say when the error was mapped to a provider's plain tool-error shape.
Models told only "unknown" mostly retry, and a non-idempotent effect (a
payment) is applied twice.

The oracle must report: UNSAFE_RETRY_GUIDANCE (G6).
Shows at: payment.toml tool/durable#1 then resume: charge_card (neither
read-only nor idempotent) repaired TOOL_OUTCOME_UNKNOWN with no `retry`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from _common import Planner, run, wrap_plan_repair

from faultlab.runtime.events import TOOL_OUTCOME_UNKNOWN, Event
from faultlab.runtime.repair import RepairAction, SafetyLookup


def unguided(plan: Planner, events: Sequence[Event], safe: SafetyLookup) -> Iterator[RepairAction]:
    for action in plan(events, safe):
        error = action.data.get("error") or {}
        if error.get("code") == TOOL_OUTCOME_UNKNOWN:
            text = error["message"].split(": the session stopped", 1)[0] + "."
            bare = {"code": TOOL_OUTCOME_UNKNOWN, "message": text}  # no "retry", no advice
            action = RepairAction(action.type, {**action.data, "content": text, "error": bare})
        yield action


wrap_plan_repair(unguided)

if __name__ == "__main__":
    run()
