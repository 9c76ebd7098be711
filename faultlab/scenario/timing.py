# A scripted tool body's latency, shared by every body that runs a scenario's
# tools (the reference runtime's, the lab's MCP tool server's): a plain timer,
# or, with `returns_after` (`returns_after_start`), a wait that ends as soon as
# a body of the named tool has returned (started) in the same run, bounded by
# the latency.  Not imported by `faultlab.scenario` itself (asyncio is for
# the processes that run bodies).
from __future__ import annotations

import asyncio
import contextlib

from faultlab.scenario.model import ToolSpec

__all__ = ["BodyClock"]


class BodyClock:
    """One run's tool bodies: which tools' bodies have started and returned,
    and each body's wait."""

    def __init__(self) -> None:
        self._seen: dict[tuple[str, str], asyncio.Event] = {}

    def _event(self, tool: str, what: str) -> asyncio.Event:
        return self._seen.setdefault((tool, what), asyncio.Event())

    async def latency(self, spec: ToolSpec) -> None:
        """Wait out `spec`'s latency, ending early once its `returns_after`
        tool has returned (its `returns_after_start` tool has started)."""
        if not spec.latency_ms:
            return
        seconds = spec.latency_ms / 1000
        if spec.returns_after is not None:
            event = self._event(spec.returns_after, "returned")
        elif spec.returns_after_start is not None:
            event = self._event(spec.returns_after_start, "started")
        else:
            await asyncio.sleep(seconds)
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(event.wait(), seconds)

    def started(self, tool: str) -> None:
        """A body of `tool` started: the bodies waiting for it go on (in a
        later turn of the event loop)."""
        self._event(tool, "started").set()

    def returned(self, tool: str) -> None:
        """A body of `tool` returned: the bodies waiting for it go on (in a
        later turn of the event loop, after the caller's own next steps)."""
        self._event(tool, "returned").set()
