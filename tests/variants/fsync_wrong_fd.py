"""Variant: the JSONL backend fsyncs the wrong descriptor.

Bug imitated: `sync()` calls `os.fsync` on the writer-lock fd instead of the
log's (two fds side by side in one object; the wrong one was picked in a
refactor). Every call succeeds and the probe reports `fsync` of the log with
its size, so an oracle that believes the target sees nothing wrong, and a
SIGKILL loses nothing (the page cache survives). The system calls show the
fsync going to `session.jsonl.lock`: the log's bytes after its creation are
never durable.

The oracle must report: FSYNC_WRONG_FILE (the reported fsync checked
against the strace of the reference run), and under power-loss the losses
the durable log shows (SETTLED_STEP_LOST).
Shows at: chat.toml flush/written#2 [power-loss].
"""

from __future__ import annotations

import os

from _common import run

from faultlab.probe import PROBE
from faultlab.runtime.backends.jsonl import JsonlBackend


def sync(self: JsonlBackend) -> None:
    try:
        self._maybe_fail("sync")
        os.fsync(self._lock_fd)  # the bug: the lock's descriptor, not the log's
    except OSError:
        self._roll_back()
        raise
    self._synced_size = self._written_size
    self._synced_seq = self._next_seq
    if PROBE.enabled:
        PROBE.fact("fsync", file=str(self.path), size=self._synced_size)


JsonlBackend.sync = sync  # type: ignore[method-assign]

if __name__ == "__main__":
    run()
