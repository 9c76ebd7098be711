# The cancellation signal of a turn.  Cancellation is cooperative: the loop,
# the model stream and the tool dispatcher check the token at their own safe
# points, so a running tool body is never interrupted half way and a graceful
# stop can always write the real closing events.
from __future__ import annotations

import asyncio

__all__ = ["CancelToken"]


class CancelToken:
    """Set once; checked by whoever must not start new work after it."""

    def __init__(self) -> None:
        self._event = asyncio.Event()
        self.reason = ""

    def is_cancelled(self) -> bool:
        return self._event.is_set()

    def cancel(self, reason: str = "cancelled") -> None:
        if not self._event.is_set():
            self.reason = reason
            self._event.set()

    async def sleep(self, seconds: float) -> bool:
        """Sleep up to `seconds`; return True if cancelled before or meanwhile."""
        if seconds <= 0 or self.is_cancelled():
            return self.is_cancelled()
        try:
            await asyncio.wait_for(self._event.wait(), seconds)
        except TimeoutError:
            return False
        return True
