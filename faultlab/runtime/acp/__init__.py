# The reference runtime as an ACP (Agent Client Protocol) agent: the scripted
# scenario served over stdio with the `agent-client-protocol` SDK
# (`python -m faultlab.runtime.acp`).  `updates` maps log events to the
# session/update notifications a client is shown, `session` composes one
# session (bridge, policy, persistence), `server` answers the ACP methods.
# See docs/acp.md.
from __future__ import annotations

__all__ = ["META_KEY"]

# The `_meta` key under which faultlab's own fields travel in ACP messages.
META_KEY = "faultlab"
