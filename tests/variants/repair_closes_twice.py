"""Variant: crash repair appends its closers twice.

Bug imitated: two code paths close the interrupted turn (the loader's
repair and the agent's own "finish the turn" cleanup, or a close-out helper
called in a `finally` and again after it), so the repaired log ends with
`step/end`, `turn/end {interrupted}`, `step/end`, `turn/end {interrupted}`:
a turn ended twice, which history builders, UIs and analytics read as an
extra (empty) turn or reject.

The oracle must report: REPAIR_MISCLASSIFIED (G3: the turn must be ended
once) and PROVIDER_INVALID_HISTORY (G7: a `turn/end` with no open turn).
Shows at: payment.toml tool/durable#1 (any kill inside an open turn).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from _common import Planner, run, wrap_plan_repair

from faultlab.runtime.events import STEP_END, TURN_END, Event
from faultlab.runtime.repair import RepairAction, SafetyLookup


def twice(plan: Planner, events: Sequence[Event], safe: SafetyLookup) -> Iterator[RepairAction]:
    actions = plan(events, safe)
    yield from actions
    yield from (a for a in actions if a.type in (STEP_END, TURN_END))  # the bug


wrap_plan_repair(twice)

if __name__ == "__main__":
    run()
