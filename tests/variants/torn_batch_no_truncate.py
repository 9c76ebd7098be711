"""Variant: a batch is written one line per write call, and a failed write is
not undone.

Bug imitated: a backend that loops `write(line)` over a batch and, when one
write fails (EIO, ENOSPC), raises without truncating what the earlier writes
of that batch already put in the file; the coordinator retries the whole
batch, and the lines written before the failure are there twice.

The oracle must report: SEQ_DUPLICATE (G5).
Shows at: payment.toml step/logged#1 under the io-error fault.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from _common import run

from faultlab.probe import PROBE
from faultlab.runtime.backends.jsonl import JsonlBackend
from faultlab.runtime.backends.jsonl_format import encode_events
from faultlab.runtime.events import Event


def _line_by_line(self: JsonlBackend, events: Sequence[Event]) -> None:
    if not events:
        return
    for index, event in enumerate(events):
        if index == len(events) - 1:
            self._maybe_fail("write")  # the injected failure hits the batch's last line
        line = encode_events([event])
        offset = self._written_size
        os.write(self._fd, line)
        self._written_size += len(line)
        if PROBE.enabled:
            PROBE.fact("write", file=str(self.path), offset=offset, bytes=len(line))
    self._next_seq = events[-1].seq + 1
    if PROBE.enabled:
        PROBE.reach("flush/written", file=str(self.path), size=self._written_size)


def _sync_no_rollback(self: JsonlBackend) -> None:
    os.fsync(self._fd)
    self._synced_size = self._written_size
    self._synced_seq = self._next_seq
    if PROBE.enabled:
        PROBE.fact("fsync", file=str(self.path), size=self._synced_size)


JsonlBackend.append_batch = _line_by_line  # type: ignore[method-assign]
JsonlBackend.sync = _sync_no_rollback  # type: ignore[method-assign]

if __name__ == "__main__":
    run()
