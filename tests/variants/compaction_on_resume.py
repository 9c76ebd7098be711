"""Variant: resume "compacts" the log before repairing it.

Bug imitated: on load, the runtime drops the lossy `assistant/chunk` events
to save space and rewrites session.jsonl with the remaining events renumbered
from 0 (atomically, so nothing looks torn). The recovered log is no longer a
prefix of what was appended: seqs that were durable now name other events,
and every `sourceEventSeqs` citation past the first chunk is stale.

The oracle must report: LOG_NOT_PREFIX (G5).
Shows at: chat.toml step/durable#1 then resume (the ten durable chunks,
seqs 4..13, are gone and the assistant message moves from seq 14 to seq 4).
"""

from __future__ import annotations

import os

from _common import run

from faultlab.runtime.backends.jsonl import LOG_NAME, JsonlBackend
from faultlab.runtime.backends.jsonl_format import encode_events, read_log
from faultlab.runtime.events import ASSISTANT_CHUNK, Event

_reference_open_existing = JsonlBackend._open_existing


def _compact(backend: JsonlBackend) -> None:
    data = backend.path.read_bytes()
    events = read_log(data, str(backend.path)).events
    kept = [event for event in events if event.type != ASSISTANT_CHUNK]
    if len(kept) == len(events):
        return
    renumbered = [Event(seq, e.type, e.time, e.data) for seq, e in enumerate(kept)]
    header = data[: data.index(b"\n") + 1]
    temp = backend.directory / f".{LOG_NAME}.compact.tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, header + encode_events(renumbered))
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temp, backend.path)
    dir_fd = os.open(backend.directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def compacting_open_existing(self: JsonlBackend) -> object:
    _compact(self)  # under the writer lock, before load and repair
    return _reference_open_existing(self)


JsonlBackend._open_existing = compacting_open_existing  # type: ignore[method-assign,assignment]

if __name__ == "__main__":
    run()
