"""Variant: the request checkpoint flushes after the model stream is built.

Bug imitated: the `llm/stream` middleware awaits `next_(request)` first and
flushes once it holds the stream, on the belief that a stream is lazy and
nothing was sent yet. Real SDKs send the HTTP request when the stream is
constructed: the provider has the request (and bills it, and may act on it)
while `request/header` is still only in memory. The flush then follows, so a
SIGKILL (the page cache survives it) never shows the gap; a power loss
between the model call and that fsync does.

The oracle must report: REQUEST_ENVELOPE_LOST (G1).
Shows at: chat.toml flush/written#1 under power-loss (and torn-write): the
model was called (`request/durable` passed) and the header's bytes were
written but not fsynced.
"""

from __future__ import annotations

from typing import Any

from _common import edit_semantic_policy, run

from faultlab.runtime.host import LLM_STREAM
from faultlab.runtime.persistence import PersistenceCoordinator


def _late(coordinator: PersistenceCoordinator) -> dict[str, Any]:
    async def checkpoint(request: Any, next_: Any) -> Any:
        stream = await next_(request)  # the bug: the provider already has the request
        await coordinator.flush()
        return stream

    return {LLM_STREAM: lambda _reference: checkpoint}


edit_semantic_policy(_late)

if __name__ == "__main__":
    run()
