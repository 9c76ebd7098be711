"""Variant: the JSONL backend reports an fsync it never made.

Bug imitated: the fsync was put behind a "fast mode" switch that is on by
default, while the probe call (and the coordinator's "flush ok") stayed:
the target tells the lab its log is durable. Under the target's own facts
every power-loss case passes, since the facts say every batch was synced.
The system calls show no fsync of the log after its creation at all.

The oracle must report: FSYNC_NOT_MADE (the reported fsync checked against
the strace of the reference run), and under power-loss SETTLED_STEP_LOST.
Shows at: chat.toml flush/written#2 [power-loss].
"""

from __future__ import annotations

from _common import run

from faultlab.probe import PROBE
from faultlab.runtime.backends.jsonl import JsonlBackend


def sync(self: JsonlBackend) -> None:
    try:
        self._maybe_fail("sync")
    except OSError:
        self._roll_back()
        raise
    # The bug: no os.fsync, but the fact says there was one.
    self._synced_size = self._written_size
    self._synced_seq = self._next_seq
    if PROBE.enabled:
        PROBE.fact("fsync", file=str(self.path), size=self._synced_size)


if __name__ == "__main__":  # (recovery_reports_unmade_fsync.py imports `sync`)
    JsonlBackend.sync = sync  # type: ignore[method-assign]
    run()
