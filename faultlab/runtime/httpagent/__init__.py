# faultlab's reference black-box agent: the reference runtime's loop, session
# log, semantic checkpoints and crash repair, with a real model client (the
# Anthropic Messages API over HTTP, streamed) and real tools (MCP servers over
# stdio).  It knows only its prompt, the model URL and the MCP config: the lab
# tests it as it tests any agent it did not write, from the outside.
from __future__ import annotations

__all__: list[str] = []
