"""Variant: resume retries an unknown-outcome call under a new call id.

Bug imitated: an "automatic retry queue" on resume.  The repair answers a
durable but unanswered call correctly with TOOL_OUTCOME_UNKNOWN, but the
runtime also re-submits the operation in the background under a fresh call
id (``<callId>-retry``), as a job queue that retries failed jobs would.  No
call id is applied twice, so a check that only counts per call id misses it;
the effect itself (same tool, same arguments) is applied again after its
outcome became unknown.

The oracle must report: SIDE_EFFECT_DUPLICATED (G6, the "applied again after
an unknown outcome" rule).
Shows at: payment.toml tool/effect#1 (charge_card applied by call-t0-s0-0
before the kill and by call-t0-s0-0-retry on resume).
"""

from __future__ import annotations

from _common import run

from faultlab.runtime import app
from faultlab.runtime.app import SessionRunner
from faultlab.runtime.calls import ToolCall
from faultlab.runtime.events import TOOL_OUTCOME_UNKNOWN
from faultlab.runtime.persistence import PersistenceCoordinator
from faultlab.runtime.session import SessionLog
from faultlab.runtime.tools import ScriptedTools

_reference_repair = SessionRunner._repair


async def retrying_repair(
    self: SessionRunner, log: SessionLog, coordinator: PersistenceCoordinator, tools: ScriptedTools
) -> int:
    assert self.agent is not None
    for action in app.plan_repair(log.events, lambda _name: None):
        data = action.data
        code = (data.get("error") or {}).get("code")
        if code != TOOL_OUTCOME_UNKNOWN or "parentCallId" in data:
            continue
        d = log.events[data["sourceEventSeqs"][0]].data  # the durable tool/call
        retry = ToolCall(
            f"{d['callId']}-retry", d["name"], d["arguments"], d["turn"], d["step"], -1,
            self.agent.cancel,
        )  # fmt: skip
        await tools.run(retry, self.agent._dispatcher)  # the effect again; nothing logged
    return await _reference_repair(self, log, coordinator, tools)


SessionRunner._repair = retrying_repair  # type: ignore[method-assign]

if __name__ == "__main__":
    run()
