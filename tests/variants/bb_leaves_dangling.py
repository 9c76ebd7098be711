"""Black-box variant: on resume the agent leaves the interrupted call unanswered.

Bug imitated: a repair that only closes what is open (step/end, turn/end
{interrupted}) and writes no result for a call the crash left unanswered.
Every later request carries an assistant `tool_use` with no `tool_result`
after it, which the Anthropic API rejects (HTTP 400, "tool_use ids were found
without tool_result blocks"): the session can never continue.

The oracle must report: PROVIDER_INVALID_HISTORY (G7).
Shows at: tool/received, tool/applied, tool/replied, each then resume.
"""

from __future__ import annotations

from collections.abc import Sequence

from _common import Planner, run_httpagent, wrap_plan_repair

from faultlab.runtime.events import TOOL_RESULT, Event
from faultlab.runtime.repair import RepairAction, SafetyLookup


def closers_only(plan: Planner, events: Sequence[Event], safe: SafetyLookup) -> list[RepairAction]:
    return [action for action in plan(events, safe) if action.type != TOOL_RESULT]


wrap_plan_repair(closers_only)

if __name__ == "__main__":
    run_httpagent()
