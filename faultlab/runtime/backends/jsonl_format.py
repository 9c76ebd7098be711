# Bytes <-> events for the JSONL log format v1: encoding of the header and
# event lines, and the reader that cuts a torn tail and reports corruption in
# the committed region with its line number and byte offset.
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from faultlab.runtime.backends.base import LoadedLog, SessionCorruptError
from faultlab.runtime.events import EVENT_TYPES, FORMAT_VERSION, TURN_END, Event

__all__ = ["encode_events", "encode_header", "read_log"]

_NEWLINE = orjson.OPT_APPEND_NEWLINE


def encode_header(session_id: str, created_at: float) -> bytes:
    header = {
        "type": "session",
        "format": FORMAT_VERSION,
        "id": session_id,
        "createdAt": created_at,
    }
    return orjson.dumps(header, option=_NEWLINE)


def encode_events(events: Sequence[Event]) -> bytes:
    dumps = orjson.dumps
    return b"".join(dumps(event.to_json(), option=_NEWLINE) for event in events)


class _BadLine(Exception):
    pass


def _decode_event(line: bytes, expected_seq: int) -> Event:
    try:
        raw = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise _BadLine(f"not JSON ({exc})") from None
    if not isinstance(raw, dict):
        raise _BadLine("not a JSON object")
    seq, type_, time_, data = raw.get("seq"), raw.get("type"), raw.get("time"), raw.get("data")
    if not isinstance(seq, int) or isinstance(seq, bool):
        raise _BadLine("field 'seq' is missing or not an integer")
    if not isinstance(type_, str) or type_ not in EVENT_TYPES:
        raise _BadLine(f"field 'type' is {type_!r}, not a known event type")
    if not isinstance(time_, int | float) or isinstance(time_, bool):
        raise _BadLine("field 'time' is missing or not a number")
    if not isinstance(data, dict):
        raise _BadLine("field 'data' is missing or not an object")
    if seq != expected_seq:
        kind = "gap" if seq > expected_seq else "duplicate"
        raise _BadLine(f"seq {kind}: seq {seq} where {expected_seq} was expected")
    return Event(seq, type_, float(time_), data)


def _decode_header(line: bytes, path: str) -> dict[str, Any]:
    try:
        header = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise SessionCorruptError(path, 1, 0, f"header is not JSON ({exc})") from None
    if not isinstance(header, dict) or header.get("type") != "session":
        raise SessionCorruptError(path, 1, 0, "first line is not a session header")
    if header.get("format") != FORMAT_VERSION:
        problem = f"header field 'format' is {header.get('format')!r}; this reader knows 1"
        raise SessionCorruptError(path, 1, 0, problem)
    if not isinstance(header.get("id"), str):
        raise SessionCorruptError(path, 1, 0, "header field 'id' is missing or not a string")
    return header


def _last_turn_end(lines: list[bytes]) -> int:
    """Index of the last line that decodes as a turn/end event, or -1."""
    for index in range(len(lines) - 1, -1, -1):
        try:
            raw = orjson.loads(lines[index])
        except orjson.JSONDecodeError:
            continue
        if isinstance(raw, dict) and raw.get("type") == TURN_END:
            return index
    return -1


def read_log(data: bytes, path: str) -> LoadedLog:
    """Decode a whole log file.  Raise `SessionCorruptError` for committed damage."""
    if not data or b"\n" not in data:
        raise SessionCorruptError(path, 1, 0, "no complete session header line")
    header_end = data.index(b"\n") + 1
    header = _decode_header(data[: header_end - 1], path)
    body = data[header_end:]
    lines = body.split(b"\n")
    tail = lines.pop()  # bytes after the last newline: a torn line, or b""
    events: list[Event] = []
    offset = header_end
    notes: list[str] = []
    last_turn_end: int | None = None  # found lazily, once: damage is rare
    for index, line in enumerate(lines):
        line_number = index + 2
        try:
            events.append(_decode_event(line, len(events)))
        except _BadLine as bad:
            # A turn/end after the bad line means a later checkpoint made it
            # durable: committed damage, not a torn tail.
            if last_turn_end is None:
                last_turn_end = _last_turn_end(lines)
            if last_turn_end > index:
                raise SessionCorruptError(path, line_number, offset, str(bad)) from None
            notes.append(
                f"line {line_number} (byte {offset}) is damaged after the last completed turn "
                f"and was cut with everything after it: {bad}"
            )
            return LoadedLog(header, tuple(events), offset, len(data) - offset, tuple(notes))
        offset += len(line) + 1
    if tail:
        notes.append(f"torn last line of {len(tail)} bytes at byte {offset} was cut")
    return LoadedLog(header, tuple(events), offset, len(tail), tuple(notes))
