"""Variant: the persistence coordinator lets two flushes run at once.

Bug imitated: a coordinator with no in-flight flush and no lock. `flush()`
takes the unflushed events, awaits the write (as an async file API does:
here one turn of the event loop), then marks them durable. Two checkpoints
that flush concurrently (the tool checkpoints of parallel calls) both take
the batch that starts at the same durable seq, and both write it: the log
holds those seqs twice. The backend trusts its caller for seqs, as an
append-only file does (the reference backend would refuse the second batch
and the runtime would crash instead).

The oracle must report: SEQ_DUPLICATE (G5).
Shows at: parallel-reads.toml, any kill after the step's tool checkpoints
(e.g. tool/durable#4): the crashed log repeats the seqs of the first batch.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from _common import run

from faultlab.probe import PROBE
from faultlab.runtime.backends.jsonl import JsonlBackend
from faultlab.runtime.events import Event
from faultlab.runtime.persistence import FlushError, PersistenceCoordinator


async def _unserialized_flush(self: PersistenceCoordinator) -> None:
    batch = self.log.since(self.durable_seq)
    if not batch:
        return
    await asyncio.sleep(0)  # the awaited write: other checkpoints run meanwhile
    try:
        self.backend.append_batch(batch)
        self.backend.sync()
    except OSError as exc:
        if PROBE.enabled:
            PROBE.fact("flush", ok=False, first=batch[0].seq, last=batch[-1].seq,
                       error=exc.strerror or str(exc))  # fmt: skip
        raise FlushError(f"flush of seqs {batch[0].seq}..{batch[-1].seq} failed: {exc}") from exc
    self.durable_seq = max(self.durable_seq, batch[-1].seq + 1)
    self.flush_count += 1
    if PROBE.enabled:
        PROBE.fact("flush", ok=True, first=batch[0].seq, last=batch[-1].seq)


_reference_append = JsonlBackend.append_batch


def _trusting_append(self: JsonlBackend, events: Sequence[Event]) -> None:
    if events:
        self._next_seq = events[0].seq  # no "batch starts at seq X" check
    _reference_append(self, events)


PersistenceCoordinator.flush = _unserialized_flush  # type: ignore[method-assign]
JsonlBackend.append_batch = _trusting_append  # type: ignore[method-assign]

if __name__ == "__main__":
    run()
