"""ACP variant: a session opened by session/load runs without checkpoints.

Bug imitated: the agent installs the semantic policy's request and tool
checkpoints in session/new only ("a loaded session was checkpointed when it
crashed"), so after session/load the model is called and tool bodies run
with their `request/header` and `tool/call` only in memory (the post-step
and turn-end flushes stay, so a loaded session that runs to its end leaves
a complete log).  Every single crash is survived: the new session is
checkpointed and the loaded one is never crashed.  A crash *after* the load
loses the record of a request that reached the model and of a charge that
was applied; the next load charges the card again.

The oracle must report (with --drive acp): TOOL_INTENT_LOST (G2), with it
REQUEST_ENVELOPE_LOST (G1) and SIDE_EFFECT_DUPLICATED (G6).
Shows at: payment.toml request/durable#1+tool/effect#1 [double-sigkill]:
killed before the first model reply, loaded and killed inside the loaded
session's charge_card body.  No single-crash case of payment.toml catches it.
"""

from __future__ import annotations

from typing import Any

from _common import edit_semantic_policy, run_acp

from faultlab.runtime.acp import session
from faultlab.runtime.host import LLM_STREAM, TOOLS_EXECUTE

_DROPPED = {LLM_STREAM: lambda _checkpoint: None, TOOLS_EXECUTE: lambda _checkpoint: None}
_loading = False
_open = session.AcpSession.open


async def _open_noting_load(self: session.AcpSession, *, resume: bool) -> int:
    global _loading
    _loading = resume
    return await _open(self, resume=resume)


session.AcpSession.open = _open_noting_load  # type: ignore[method-assign]
edit_semantic_policy(lambda _coordinator: _DROPPED if _loading else dict[str, Any]())

if __name__ == "__main__":
    run_acp()
