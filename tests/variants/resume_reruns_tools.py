"""Variant: resume re-executes a tool whose call is durable but unanswered.

Bug imitated: "at-least-once" resume. Instead of answering a durable
`tool/call` without a result with TOOL_OUTCOME_UNKNOWN, the runtime runs the
tool body again with the same call id and records its real result. For a
non-idempotent tool whose effect was applied before the crash, the effect is
applied a second time (two world-ledger records for one call id).

The oracle must report: SIDE_EFFECT_DUPLICATED (G6).
Shows at: payment.toml tool/effect#1 then resume (charge_card applied twice
for call-t0-s0-0); deploy-careful.toml tool/effect#1 likewise.
"""

from __future__ import annotations

from _common import run

from faultlab.runtime import app
from faultlab.runtime.app import SessionRunner
from faultlab.runtime.calls import ToolCall
from faultlab.runtime.dispatch import _result_data
from faultlab.runtime.events import TOOL_OUTCOME_UNKNOWN, TOOL_RESULT
from faultlab.runtime.persistence import PersistenceCoordinator
from faultlab.runtime.session import SessionLog
from faultlab.runtime.tools import ScriptedTools

_reference_repair = SessionRunner._repair


async def rerunning_repair(
    self: SessionRunner, log: SessionLog, coordinator: PersistenceCoordinator, tools: ScriptedTools
) -> int:
    assert self.agent is not None
    for action in app.plan_repair(log.events, lambda _name: None):
        data = action.data
        code = (data.get("error") or {}).get("code")
        if code != TOOL_OUTCOME_UNKNOWN or "parentCallId" in data:
            continue
        event = log.events[data["sourceEventSeqs"][0]]  # the durable tool/call
        d = event.data
        call = ToolCall(
            d["callId"],
            d["name"],
            d["arguments"],
            d["turn"],
            d["step"],
            event.seq,
            self.agent.cancel,
        )
        result = await tools.run(call, self.agent._dispatcher)  # the effect, again
        log.append(TOOL_RESULT, _result_data(call, result, [event.seq]))
    # The reference repair then closes the step and the turn (and answers any
    # call that never started).
    return await _reference_repair(self, log, coordinator, tools)


SessionRunner._repair = rerunning_repair  # type: ignore[method-assign]

if __name__ == "__main__":
    run()
