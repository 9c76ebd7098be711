"""Variant: a failed fsync is retried, and the retry's success is trusted.

Bug imitated: PostgreSQL's "fsyncgate" (2018). When fsync fails (EIO, ENOSPC
on thin provisioning), Linux may already have dropped the dirty pages and
marked them clean; a retried fsync then returns success without writing
anything, and a runtime that retries and carries on takes bytes for durable
that may never reach the disk.  This backend retries the fsync, keeps the
bytes it wrote, reports the flush as done and says nothing of the failure.

The oracle must report: FSYNC_FAILURE_TRUSTED (G9), and dispatch after the
failed checkpoint (DISPATCH_AFTER_FAILED_CHECKPOINT); after a power loss
right after the run, the flushes it claimed are lost (G4).
Shows at: payment.toml request/logged#1 under the fsync-error fault.
"""

from __future__ import annotations

import os

from _common import run

from faultlab.probe import PROBE
from faultlab.runtime.backends.jsonl import JsonlBackend


def _sync_retrying(self: JsonlBackend) -> None:
    try:
        self._maybe_fail("sync")
        os.fsync(self._fd)
    except OSError:
        os.fsync(self._fd)  # the bug: the retry "succeeds", the pages may be gone
    self._synced_size = self._written_size
    self._synced_seq = self._next_seq
    if PROBE.enabled:
        PROBE.fact("fsync", file=str(self.path), size=self._synced_size)


JsonlBackend.sync = _sync_retrying  # type: ignore[method-assign]

if __name__ == "__main__":
    run()
