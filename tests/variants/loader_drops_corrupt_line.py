"""Variant: the loader silently drops a corrupt committed line.

Bug imitated: the classic JSONL reader `for line in f: try: json.loads(line)
except ValueError: continue`, which numbers events by their position in the
file. A line damaged inside the committed region (a lost sector, a bad
copy, a bit flip) vanishes without a word; the session resumes on a history
that silently lacks an event, and new events are written after it with
seqs that collide with the ones already on disk.

The oracle must report: CORRUPTION_IGNORED (G5), under the
corrupt-committed fault: the target loaded a log with a corrupt committed
line and exited 0 instead of refusing it.
Shows at: chat.toml turn/durable#1 under corrupt-committed (any scenario).
"""

from __future__ import annotations

import orjson
from _common import run

from faultlab.runtime.backends import jsonl
from faultlab.runtime.backends.base import LoadedLog, SessionCorruptError
from faultlab.runtime.backends.jsonl_format import _decode_header
from faultlab.runtime.events import EVENT_TYPES, Event

_reference_read = jsonl.read_log


def _lenient_read(data: bytes, path: str) -> LoadedLog:
    try:
        return _reference_read(data, path)
    except SessionCorruptError as exc:
        if exc.line == 1:
            raise  # a bad header is still refused
    header_end = data.index(b"\n") + 1
    header = _decode_header(data[: header_end - 1], path)
    lines = data[header_end:].split(b"\n")
    tail = lines.pop()
    events: list[Event] = []
    for line in lines:
        try:
            raw = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue  # the bug: a damaged line is skipped, silently
        if isinstance(raw, dict) and raw.get("type") in EVENT_TYPES:
            events.append(Event(len(events), raw["type"], raw["time"], raw["data"]))
    return LoadedLog(header, tuple(events), len(data) - len(tail), len(tail))


jsonl.read_log = _lenient_read  # type: ignore[assignment]

if __name__ == "__main__":
    run()
