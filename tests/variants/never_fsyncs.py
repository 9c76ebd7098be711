"""Variant: the JSONL backend never calls fsync on the log.

Bug imitated: `sync()` was made a no-op (say, to make a benchmark fast, or
because "the kernel writes it out anyway") while the coordinator still calls
every flush done. The batch is written with one `os.write`, so the bytes sit
in the page cache: a SIGKILL loses nothing and every SIGKILL case passes, but
a power loss drops everything written since the log was created. The probe
reports what really happened: `write` and `flush/written` as usual, no
`fsync` fact (an fsync that did not happen is not reported), and the
coordinator's `flush` fact with `ok: true`.

The oracle must report: SETTLED_STEP_LOST (G4) under power-loss (also
REQUEST_ENVELOPE_LOST and TOOL_INTENT_LOST, and COMPLETED_TURN_LOST once a
turn was flushed).
Shows at: payment.toml flush/written#3 [power-loss]: flushes of seqs 0..8
reported ok, the durable log holds its header only (the request went to the
model, the charge was applied).
"""

from __future__ import annotations

from _common import run

from faultlab.runtime.backends.jsonl import JsonlBackend


def sync(self: JsonlBackend) -> None:
    try:
        self._maybe_fail("sync")
    except OSError:
        self._roll_back()
        raise
    # No os.fsync (and so no `fsync` fact): the flush is called durable anyway.
    self._synced_size = self._written_size
    self._synced_seq = self._next_seq


JsonlBackend.sync = sync  # type: ignore[method-assign]

if __name__ == "__main__":
    run()
