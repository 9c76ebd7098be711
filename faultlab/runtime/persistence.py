# The persistence coordinator owns durability: `flush()` is a barrier that
# makes every event appended so far durable.  Concurrent flush requests
# coalesce onto one in-flight write and are serialized, so concurrent
# checkpoints can never write an event twice or out of order.  A failed flush
# keeps the unflushed events (the next flush retries them) and raises.
from __future__ import annotations

import asyncio

from faultlab.probe import PROBE
from faultlab.runtime.backends.base import Backend
from faultlab.runtime.session import SessionLog

__all__ = ["FlushError", "PersistenceCoordinator"]


class FlushError(Exception):
    """A flush did not make the log durable; the events stay buffered."""


class PersistenceCoordinator:
    """Flushes a `SessionLog` to a `Backend`."""

    def __init__(
        self, log: SessionLog, backend: Backend, *, durable_seq: int | None = None
    ) -> None:
        self.log = log
        self.backend = backend
        # Every event with seq < durable_seq is durable.
        self.durable_seq = log.next_seq if durable_seq is None else durable_seq
        self.flush_count = 0
        self.failed_flushes = 0
        self._inflight: asyncio.Task[None] | None = None

    @property
    def pending(self) -> int:
        """Number of appended events that are not durable yet."""
        return self.log.next_seq - self.durable_seq

    async def flush(self) -> None:
        """Return once every event appended before this call is durable."""
        target = self.log.next_seq
        while self.durable_seq < target:
            if self._inflight is None:
                self._inflight = asyncio.get_running_loop().create_task(self._write_pending())
            inflight = self._inflight
            # shield: a cancelled caller must not cancel a write other
            # checkpoints are waiting on, nor leave it half-recorded.
            await asyncio.shield(inflight)

    async def _write_pending(self) -> None:
        try:
            self.flush_now()
        finally:
            self._inflight = None

    def flush_now(self) -> None:
        """Synchronous flush (used at shutdown, outside a running loop)."""
        batch = self.log.since(self.durable_seq)
        if not batch:
            return
        try:
            self.backend.append_batch(batch)
            self.backend.sync()
        except OSError as exc:
            self.failed_flushes += 1
            if PROBE.enabled:
                PROBE.fact(
                    "flush",
                    ok=False,
                    first=batch[0].seq,
                    last=batch[-1].seq,
                    error=exc.strerror or str(exc),
                )
            raise FlushError(
                f"flush of seqs {batch[0].seq}..{batch[-1].seq} to {self.backend.location} "
                f"failed: {exc.strerror or exc}"
            ) from exc
        self.durable_seq = batch[-1].seq + 1
        self.flush_count += 1
        if PROBE.enabled:
            PROBE.fact("flush", ok=True, first=batch[0].seq, last=batch[-1].seq)
