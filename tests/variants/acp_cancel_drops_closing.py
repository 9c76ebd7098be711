"""ACP variant: session/cancel tears the turn down with asyncio cancellation.

Bug imitated: the cancel handler calls `Task.cancel()` on the running turn
instead of setting its cancel token, and the prompt handler answers
`cancelled` when the CancelledError reaches it.  The turn never writes its
real step/end and turn/end, its in-flight tool calls are never answered (the
client keeps them in progress), and the next load has to repair the session.

The oracle must report: CANCEL_NOT_PERSISTED (with --drive acp, fault acp-cancel).
Shows at: payment.toml tool/durable#1 [acp-cancel] (any boundary inside a turn).
"""

from __future__ import annotations

import asyncio

from _common import run_acp

from faultlab.runtime.acp.session import AcpSession

_prompt = AcpSession.prompt


def cancel_tasks(self: AcpSession, reason: str = "session/cancel") -> bool:
    if self.agent is None:
        return False
    for task in list(self.app._tasks):
        task.cancel()
    return True


async def prompt(self: AcpSession, text: str) -> str:
    try:
        return await _prompt(self, text)
    except asyncio.CancelledError:
        return "cancelled"


AcpSession.cancel = cancel_tasks  # type: ignore[method-assign]
AcpSession.prompt = prompt  # type: ignore[method-assign]

if __name__ == "__main__":
    run_acp()
