"""Variant: the tool checkpoint flushes after the tool body instead of before.

Bug imitated: the `tools/execute` middleware awaits the body first and flushes
afterwards ("persist the call together with its result"), so a side effect
can happen while its `tool/call` exists only in memory. A crash inside the
body leaves an effect in the world that the log knows nothing about (not
even the assistant message that asked for it survives), so after resume the
model asks for it again and the effect is applied twice.

The oracle must report: TOOL_INTENT_LOST (G2).
Shows at: payment.toml tool/effect#1 (not tool/durable#1, where the body has not
started yet): a charge_card effect in the world ledger, no tool/call in the log.
"""

from __future__ import annotations

from typing import Any

from _common import edit_semantic_policy, run

from faultlab.runtime.calls import ToolCall, ToolResult, aborted_before_dispatch
from faultlab.runtime.host import TOOLS_EXECUTE, Next
from faultlab.runtime.persistence import PersistenceCoordinator


def _late_checkpoint(coordinator: PersistenceCoordinator) -> dict[str, Any]:
    async def flush_after_body(call: ToolCall, next_: Next) -> ToolResult:
        if call.nested:
            nested: ToolResult = await next_(call)
            return nested
        if call.cancel.is_cancelled():
            return aborted_before_dispatch(call)
        result: ToolResult = await next_(call)
        await coordinator.flush()  # too late: the body has already run
        return result

    return {TOOLS_EXECUTE: lambda _checkpoint: flush_after_body}


edit_semantic_policy(_late_checkpoint)

if __name__ == "__main__":
    run()
