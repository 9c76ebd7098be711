"""Variant: the JSONL backend fsyncs the fd without flushing its userspace buffer.

Bug imitated: the log is written through a buffered file object (1 MiB
buffer) and `sync()` calls `os.fsync(fd)` without `file.flush()` first. The
fsync succeeds on a file the bytes never reached, so every flush reports
success (`write`, `flush/written`, `fsync` and `flush ok` facts as usual)
while the events sit in process memory until a clean close. A SIGKILL loses
settled steps and completed turns alike; loading still works (the file holds
a valid, shorter log).

The oracle must report: SETTLED_STEP_LOST (G4), or COMPLETED_TURN_LOST (G4)
once a turn was durable.
Shows at: chat.toml step/durable#1 (SETTLED_STEP_LOST) and turn/durable#1
(COMPLETED_TURN_LOST): the log holds its header only.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import BinaryIO

from _common import run

from faultlab.probe import PROBE
from faultlab.runtime import app
from faultlab.runtime.backends import Backend, JsonlBackend
from faultlab.runtime.backends.jsonl_format import encode_events
from faultlab.runtime.events import Event

BUFFER = 1 << 20


class BufferedJsonlBackend(JsonlBackend):
    _buffer: BinaryIO | None = None

    def append_batch(self, events: Sequence[Event]) -> None:
        if not events:
            return
        payload = encode_events(events)
        offset = self._written_size
        self._maybe_fail("write")
        if self._buffer is None:
            self._buffer = open(os.dup(self._fd), "ab", buffering=BUFFER)  # noqa: SIM115
        self._buffer.write(payload)  # lands in the userspace buffer, not the kernel
        self._written_size = offset + len(payload)
        self._next_seq = events[-1].seq + 1
        if PROBE.enabled:
            PROBE.fact("write", file=str(self.path), offset=offset, bytes=len(payload))
            PROBE.reach("flush/written", file=str(self.path), size=self._written_size)

    # sync() is the reference one: os.fsync(self._fd), with no buffer flush.

    def close(self) -> None:
        if self._buffer is not None:
            self._buffer.close()  # only a clean close flushes the buffer
            self._buffer = None
        super().close()


_reference_open = app.open_backend


def open_backend(kind: str, directory: str) -> Backend:
    if kind == "jsonl":
        return BufferedJsonlBackend(directory)
    return _reference_open(kind, directory)


app.open_backend = open_backend

if __name__ == "__main__":
    run()
