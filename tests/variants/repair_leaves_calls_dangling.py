"""Variant: crash repair closes the step and the turn but answers no tool call.

Bug imitated: a repair that only "closes what is open" (step/end, turn/end
{interrupted}) and forgets the synthetic results, so the history keeps an
assistant message whose tool calls have no result. Real model APIs reject
such a history ("tool_use ids were found without tool_result blocks").

The oracle must report: PROVIDER_INVALID_HISTORY (G7).
Shows at: payment.toml tool/durable#1 then resume (call-t0-s0-0 never
answered).
"""

from __future__ import annotations

from collections.abc import Sequence

from _common import Planner, run, wrap_plan_repair

from faultlab.runtime.events import TOOL_RESULT, Event
from faultlab.runtime.repair import RepairAction, SafetyLookup


def closers_only(plan: Planner, events: Sequence[Event], safe: SafetyLookup) -> list[RepairAction]:
    return [action for action in plan(events, safe) if action.type != TOOL_RESULT]


wrap_plan_repair(closers_only)

if __name__ == "__main__":
    run()
