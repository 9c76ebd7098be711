"""Variant: crash repair answers top-level calls only.

Bug imitated: repair walks the assistant messages for dangling tool calls and
answers those, never looking at nested calls (a tool body calling a tool):
a nested call whose `tool/call` was durable when the process died is left
with no result, so nobody records that its outcome is unknown, and a
re-run of the parent may apply its effect again.

The oracle must report: REPAIR_MISCLASSIFIED (G3: the nested call has no
result).
Shows at: nested-parallel.toml tool/durable#4 under the default `semantic`
policy: the `ping` call's tool checkpoint flushed the nested `audit` ->
`lookup` call while its body was still running.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from _common import Planner, run, wrap_plan_repair

from faultlab.runtime.events import TOOL_RESULT, Event
from faultlab.runtime.repair import RepairAction, SafetyLookup


def top_level_only(
    plan: Planner, events: Sequence[Event], safe: SafetyLookup
) -> Iterator[RepairAction]:
    for action in plan(events, safe):
        if action.type == TOOL_RESULT and action.data.get("parentCallId") is not None:
            continue  # the bug
        yield action


wrap_plan_repair(top_level_only)

if __name__ == "__main__":
    run()
