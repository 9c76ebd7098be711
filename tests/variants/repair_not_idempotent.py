"""Variant: repair re-closes a turn that already ended `interrupted`.

Bug imitated: the "is the last turn open?" test checks for a `completed`
turn/end instead of any turn/end, so a turn closed by an earlier repair still
looks open and its closer is appended again: repairing a repaired log adds
another `turn/end {interrupted}`, and a crash after a repair is committed
(before the resumed turn is durable) grows the log on every load.

The oracle must report: REPAIR_NOT_IDEMPOTENT (G8).
Shows at: payment.toml tool/durable#1 (the lab loads the repaired log again);
by hand: kill there, kill the resumed child at repair/durable#1
(crash-in-repair), resume again: two turn/end {interrupted} for turn 0.
"""

from __future__ import annotations

from collections.abc import Sequence

from _common import Planner, run, wrap_plan_repair

from faultlab.runtime.events import TURN_END, Event
from faultlab.runtime.repair import RepairAction, SafetyLookup


def reclosing(plan: Planner, events: Sequence[Event], safe: SafetyLookup) -> list[RepairAction]:
    actions = plan(events, safe)
    if not actions and events and events[-1].type == TURN_END:
        last = events[-1].data
        if last["reason"]["kind"] == "interrupted":  # "not completed, so still open"
            reason = {"kind": "interrupted"}
            return [RepairAction(TURN_END, {"turn": last["turn"], "reason": reason})]
    return actions


wrap_plan_repair(reclosing)

if __name__ == "__main__":
    run()
