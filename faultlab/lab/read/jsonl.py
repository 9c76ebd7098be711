# The lab's own reader of the JSONL session log, format version 1
# (docs/log-format.md).  It owns one question: what does this file durably say?
# It splits the bytes into the header, the events, a cut tail and a list of
# problems (bad header, committed damage, seq gaps and duplicates), and never
# raises on any input.  Seqs must run contiguously from 0; a corrupt committed
# line may have held one seq, so it excuses a skip of one in the next good line.
# It is written from the format description, not from the runtime's reader, on
# purpose: the oracle must not share the runtime's bugs.  Every line is decoded
# by one `loads` function (orjson by default; `faultlab bench` passes the
# standard library's to compare).
#
# Speed: the line-by-line loop of `parse_log` is the reference.  In front of it
# `_read_good_prefix` takes the common case in bulk (C-level map/set passes over
# blocks of lines instead of Python work per line; docs/log-reader.md says what
# a caller can see of it: memory, shared type strings, the garbage collector):
# it decodes each line with the same `loads` call on the same bytes, and keeps
# the longest prefix of lines that are valid
# events whose seq equals their index.  Those are exactly the lines the
# reference would turn into events without a problem and without touching any
# other state, so the reference resumes after them (at once, for an intact log
# or one with only a torn tail) and keeps all its diagnostics.
from __future__ import annotations

import contextlib
import gc
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import accumulate, repeat
from operator import add, itemgetter
from pathlib import Path
from typing import Any, NamedTuple, TypeGuard

import orjson

__all__ = [
    "BAD_HEADER",
    "CORRUPT_COMMITTED_LOG",
    "EVENT_TYPES",
    "SEQ_DUPLICATE",
    "SEQ_GAP",
    "LogEvent",
    "LogProblem",
    "LogView",
    "parse_log",
    "read_log_file",
]

CORRUPT_COMMITTED_LOG = "CORRUPT_COMMITTED_LOG"
SEQ_GAP = "SEQ_GAP"
SEQ_DUPLICATE = "SEQ_DUPLICATE"
BAD_HEADER = "BAD_HEADER"

# Version 1 has exactly these ten event types; any other makes a line bad.
EVENT_TYPES: frozenset[str] = frozenset(
    {
        "turn/start",
        "user/message",
        "step/start",
        "step/end",
        "request/header",
        "assistant/chunk",
        "assistant/message",
        "tool/call",
        "tool/result",
        "turn/end",
    }
)

_FORMAT = 1
_NL = b"\n"

Loads = Callable[[bytes], Any]
# What a `loads` may raise on a bad line: orjson.JSONDecodeError and
# json.JSONDecodeError are ValueErrors (as is a UnicodeDecodeError); the
# standard library's decoder raises RecursionError on very deep nesting.
_DECODE_ERRORS = (ValueError, RecursionError)


class LogEvent(NamedTuple):
    """One good event line: ``line`` is 1-based (the header is line 1), ``offset``
    the byte offset of the start of the line.

    A named tuple rather than a slotted dataclass: a big log is hundreds of
    thousands of them, and a tuple is built from its six values in one
    C-level call (`tuple.__new__` over a `zip` of the columns) where a
    slotted instance needs six stores, one per field."""

    seq: int
    type: str
    time: float
    data: dict[str, Any]
    line: int
    offset: int


@dataclass(frozen=True, slots=True)
class LogProblem:
    """A defect of the log, at the line and byte offset where it starts."""

    code: str
    line: int
    offset: int
    message: str


@dataclass(frozen=True, slots=True)
class LogView:
    """What a log file durably says.

    ``valid_size`` is where the kept part ends; ``torn_bytes`` (= ``size`` -
    ``valid_size``) were cut as a torn tail or as damage after the last
    completed turn.  A log with a bad header keeps nothing and cuts nothing.
    """

    path: str
    exists: bool
    header: dict[str, Any] | None
    events: tuple[LogEvent, ...]
    size: int
    valid_size: int
    torn_bytes: int
    problems: tuple[LogProblem, ...]

    @property
    def session_id(self) -> str | None:
        if self.header is None:
            return None
        value = self.header.get("id")
        return value if isinstance(value, str) else None

    @property
    def seqs_ok(self) -> bool:
        """No problem of any kind: the kept events are a clean, contiguous log."""
        return not self.problems

    @property
    def last_turn_open(self) -> bool:
        """The last ``turn/start`` has no ``turn/end`` after it."""
        for event in reversed(self.events):
            if event.type == "turn/end":
                return False
            if event.type == "turn/start":
                return True
        return False


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_event(obj: object) -> TypeGuard[dict[str, Any]]:
    """Whether a decoded line is a valid event object.  orjson and json build
    exact dict/int/float/str objects, and `type(x) is int` also rules out
    booleans; anything else (a subclass too) is left to `_what_is_wrong`."""
    if type(obj) is not dict:
        return False
    kind = obj.get("type")
    moment = type(obj.get("time"))
    return (
        type(obj.get("seq")) is int
        and type(kind) is str
        and kind in EVENT_TYPES
        and (moment is float or moment is int)
        and type(obj.get("data")) is dict
    )


def _decode_event(raw: bytes, loads: Loads) -> dict[str, Any] | str:
    """The event object of one line, or a description of what is wrong with it."""
    try:
        obj = loads(raw)
    except _DECODE_ERRORS as exc:
        return f"line is not JSON ({exc})"
    if _is_event(obj):
        return obj
    return _what_is_wrong(obj)


def _what_is_wrong(obj: object) -> str:
    if not isinstance(obj, dict):
        return f"line is a JSON {type(obj).__name__}, not an object"
    if not _is_int(obj.get("seq")):
        return f"field 'seq' is missing or not an integer ({_show(obj.get('seq'))})"
    kind = obj.get("type")
    if not isinstance(kind, str) or kind not in EVENT_TYPES:
        return f"field 'type' is not one of the ten event types ({_show(kind)})"
    if not _is_number(obj.get("time")):
        return f"field 'time' is missing or not a number ({_show(obj.get('time'))})"
    return f"field 'data' is missing or not an object ({_show(obj.get('data'))})"


def _show(value: object) -> str:
    text = "missing" if value is None else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _header_problem(raw: bytes, loads: Loads) -> dict[str, Any] | str:
    try:
        obj = loads(raw)
    except _DECODE_ERRORS as exc:
        return f"header is not JSON ({exc})"
    if not isinstance(obj, dict) or obj.get("type") != "session":
        return "first line is not a session header"
    fmt = obj.get("format")
    if not (_is_int(fmt) and fmt == _FORMAT):
        return f"header field 'format' is {_show(fmt)}; this reader knows {_FORMAT}"
    if not isinstance(obj.get("id"), str):
        return "header field 'id' is missing or not a string"
    return obj


class _LaterTurnEnd:
    """Lazily finds, once, the start of the last complete line that is a valid
    ``turn/end`` event, scanning backwards no further than the first bad line.
    Every later bad line lies after that first one, so one scan answers all."""

    __slots__ = ("_data", "_found", "_loads", "_start")

    def __init__(self, data: bytes, loads: Loads) -> None:
        self._data = data
        self._loads = loads
        self._found: tuple[int, int] | None = None  # (offset, line) of that turn/end
        self._start = -1  # -1: not scanned yet

    def after(self, offset: int, line: int) -> tuple[int, int] | None:
        if self._start < 0:
            self._start = offset
            self._found = self._scan(offset, line)
        found = self._found
        return found if found is not None and found[0] > offset else None

    def _scan(self, floor: int, floor_line: int) -> tuple[int, int] | None:
        data = self._data
        end = data.rfind(_NL)
        while end > floor:
            start = data.rfind(_NL, 0, end) + 1
            if start <= floor:
                return None
            decoded = _decode_event(data[start:end], self._loads)
            if isinstance(decoded, dict) and decoded["type"] == "turn/end":
                # Line numbers are only needed for the message: count once.
                return start, floor_line + data.count(_NL, floor, start)
            end = start - 1
        return None


# --- the bulk fast path ----------------------------------------------------------------

# Bytes per block: the fast path splits, decodes, checks and turns into events
# the complete lines of one window of the log at a time (about 1,600 token-sized
# events), so that a block's objects are still in the CPU caches for each of
# its C-level passes, and the lines and decoded records of one block die before
# the next block is read: their memory is reused instead of growing the heap
# by a copy of the whole log and a record per line.
_WINDOW = 256 * 1024
# One itemgetter per field: four plain passes measured faster here than one
# itemgetter of the four fields and a transposition of the tuples.
_SEQ = itemgetter("seq")
_TYPE = itemgetter("type")
_TIME = itemgetter("time")
_DATA = itemgetter("data")
_DICT_ONLY = {dict}
_INT_ONLY = {int}
_STR_ONLY = {str}
_FLOAT_ONLY = {float}
_NUMBERS = frozenset({float, int})
# Each event type as one shared string: the events keep these (equal) strings
# instead of one decoded copy per line, which saves a string object an event
# (memory, page faults, cache misses for whatever walks the events).
_CANONICAL_TYPE: dict[str, str] = {kind: kind for kind in EVENT_TYPES}
_event_from = tuple.__new__  # (LogEvent, values): the event, in C, no Python __new__
_ONES = repeat(1)


@contextlib.contextmanager
def _gc_paused() -> Iterator[bool]:
    """Keep the cyclic GC's automatic collections from scanning, again and
    again, the millions of young objects a big log decodes into while they are
    being built (it was most of the time); yields whether it was enabled.  The
    previous state is put back whatever happens, so a caller that had it off
    keeps it off (and `_read_good_prefix` then runs no collection either)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield was_enabled
    finally:
        if was_enabled:
            gc.enable()


_Columns = tuple[list[Any], list[Any], list[Any], list[Any]]


def _columns(records: list[Any], first: int) -> _Columns | None:
    """The seqs, types (the shared strings), times (as floats) and data of the
    records if every one is a valid event with seq ``first`` + its index and a
    time ``float()`` accepts, checked and gathered in C-level passes; else None."""
    if set(map(type, records)) != _DICT_ONLY:
        return None
    try:
        seqs = list(map(_SEQ, records))
        kinds = list(map(_TYPE, records))
        moments = list(map(_TIME, records))
        datas = list(map(_DATA, records))
    except KeyError:
        return None
    if set(map(type, seqs)) != _INT_ONLY:
        return None
    # The events keep these equal ints (made for the comparison anyway); the
    # decoded ones die with their records.
    numbers = list(range(first, first + len(seqs)))
    if seqs != numbers:
        return None
    seqs = numbers
    if set(map(type, kinds)) != _STR_ONLY:
        return None
    try:
        kinds = list(map(_CANONICAL_TYPE.__getitem__, kinds))
    except KeyError:
        return None
    if set(map(type, datas)) != _DICT_ONLY:
        return None
    kinds_of_time = set(map(type, moments))
    if kinds_of_time != _FLOAT_ONLY:
        if not _NUMBERS.issuperset(kinds_of_time):
            return None
        try:
            moments = list(map(float, moments))
        except OverflowError:  # an int too big for a float: left to the reference
            return None
    return seqs, kinds, moments, datas


def _good_count(records: list[Any], first: int) -> int:
    """The number of leading records that are valid events with seq ``first`` +
    their index and a time ``float()`` accepts (the slow search, for when
    `_columns` says not all of them are)."""
    for index, obj in enumerate(records, first):
        if not _is_event(obj) or obj["seq"] != index:
            return index - first
        moment = obj["time"]
        if type(moment) is int:
            try:
                float(moment)
            except OverflowError:
                return index - first
    return len(records)


def _read_good_prefix(data: bytes, header_end: int, loads: Loads) -> tuple[list[LogEvent], int]:
    """The events of the longest run of complete lines after the header that
    are valid events with seqs 0, 1, 2, ..., and the offset where that run
    ends: exactly what the line-by-line loop would make of those lines."""
    events: list[LogEvent] = []
    pos = header_end + 1  # where the next line starts
    swept = False  # whether a block was swept (the log spans more than one window)
    with _gc_paused() as collecting:
        while (stop := _block_end(data, pos)) >= 0:
            if collecting and events:
                # The young generations hold the events of the previous block
                # (its records are gone): sweep them while they are still in
                # the caches.  They move to the oldest generation, so no young
                # collection scans them again.
                gc.collect(1)
                swept = True
            made, pos, whole = _block_events(data[pos:stop].split(_NL), len(events), pos, loads)
            events += made
            if not whole:
                break
        if swept:
            # The last block too: else the first automatic collection after the
            # resume would find the young generations over their threshold and,
            # as the explicit ones raised the oldest generation's count, make it
            # a full collection of the whole heap at once.
            gc.collect(1)
    return events, pos


def _block_end(data: bytes, pos: int) -> int:
    """Where the block of lines starting at `pos` ends: the last newline in the
    next window of bytes, or the first one after it for a line longer than
    the window; -1 when no complete line is left (what follows is a torn tail)."""
    stop = data.rfind(_NL, pos, pos + _WINDOW)
    return stop if stop >= 0 else data.find(_NL, pos)


def _block_events(
    block: list[bytes], first: int, pos: int, loads: Loads
) -> tuple[list[LogEvent], int, bool]:
    """The events of the leading good lines of `block` (the log's lines from
    byte `pos` on, whose first event must have seq `first`), the offset where
    they end, and whether every line of the block was good."""
    records: list[Any] = []
    # Every line goes through `loads` as in the reference.  At the first line
    # that raises anything, stop: list.extend keeps the lines before it, and
    # the reference decodes that line again and deals with it as it always has.
    with contextlib.suppress(Exception):
        records.extend(map(loads, block))
    whole = len(records) == len(block)
    columns = _columns(records, first) if whole else None
    if columns is None:
        whole = False
        del records[_good_count(records, first) :]
        columns = _columns(records, first) if records else None  # the good ones pass
        if columns is None:
            return [], pos, False
    del records  # before the events are made: their memory is reused
    seqs = columns[0]
    count = len(seqs)
    # Line i starts one byte after the newline that ends line i - 1.
    offsets = list(accumulate(map(add, map(len, block[:count]), _ONES), initial=pos))
    end = offsets.pop()
    # Event i is on line i + 2: the seq objects of the events two further on
    # already hold those numbers.
    numbers = seqs[2:]
    numbers += range(first + len(numbers) + 2, first + count + 2)
    made: list[LogEvent] = list(
        map(_event_from, repeat(LogEvent, count), zip(*columns, numbers, offsets, strict=True))
    )
    return made, end, whole


# --- the reader ------------------------------------------------------------------------


def parse_log(data: bytes, path: str, *, loads: Loads = orjson.loads, fast: bool = True) -> LogView:
    """Read a whole log from its bytes, each line decoded with ``loads``.  Never
    raises (for a ``loads`` that signals a bad line with ValueError, as orjson's
    and the standard library's do).  ``fast=False`` skips the bulk fast path
    and reads every line in the reference loop (same result, for tests)."""
    size = len(data)
    header_end = data.find(_NL)
    if header_end < 0:
        return _bad_header(path, True, size, "no complete session header line")
    header = _header_problem(data[:header_end], loads)
    if isinstance(header, str):
        return _bad_header(path, True, size, header)

    events: list[LogEvent] = []
    pos = header_end + 1
    if fast:
        # Good events with seqs 0..n-1 leave the loop's state at exactly this.
        events, pos = _read_good_prefix(data, header_end, loads)
    problems: list[LogProblem] = []
    later_end = _LaterTurnEnd(data, loads)
    expected = len(events)
    unread = 0  # corrupt lines since the last good event
    line = 2 + len(events)
    valid_size = pos
    while True:
        end = data.find(_NL, pos)
        if end < 0:
            break  # whatever follows the last newline is a torn tail
        decoded = _decode_event(data[pos:end], loads)
        if isinstance(decoded, str):
            committed = later_end.after(pos, line)
            if committed is None:
                break  # damage after the last completed turn: cut from here on
            what = (
                f"line {line} (byte {pos}): {decoded}; the turn/end at line {committed[1]} "
                f"(byte {committed[0]}) after it was committed"
            )
            problems.append(LogProblem(CORRUPT_COMMITTED_LOG, line, pos, what))
            unread += 1
        else:
            seq: int = decoded["seq"]
            # Each corrupt line since the last good one may have held one seq.
            if seq < expected or seq > expected + unread:
                code, kind = (SEQ_GAP, "gap") if seq > expected else (SEQ_DUPLICATE, "duplicate")
                wanted = f"{expected}" if not unread else f"{expected}..{expected + unread}"
                what = (
                    f"line {line} (byte {pos}): seq {kind}: seq {seq} where {wanted} was expected"
                )
                problems.append(LogProblem(code, line, pos, what))
            expected = max(expected, seq + 1)
            unread = 0
            events.append(
                LogEvent(
                    seq=seq,
                    type=decoded["type"],
                    time=float(decoded["time"]),
                    data=decoded["data"],
                    line=line,
                    offset=pos,
                )
            )
        pos = end + 1
        valid_size = pos
        line += 1
    return LogView(
        path=path,
        exists=True,
        header=header,
        events=tuple(events),
        size=size,
        valid_size=valid_size,
        torn_bytes=size - valid_size,
        problems=tuple(problems),
    )


def read_log_file(path: str | Path, *, loads: Loads = orjson.loads) -> LogView:
    """Read the log at ``path`` (lines decoded with ``loads``).  A missing file is
    ``exists=False`` with no problems; a directory or an unreadable file is a
    ``BAD_HEADER`` problem."""
    name = str(path)
    where = Path(path)
    try:
        data = where.read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        return LogView(name, False, None, (), 0, 0, 0, ())
    except IsADirectoryError:
        return _bad_header(name, True, 0, "the path is a directory, not a session log file")
    except (OSError, ValueError) as exc:
        return _bad_header(name, _exists(where), 0, f"cannot read the session log ({exc})")
    return parse_log(data, name, loads=loads)


def _exists(where: Path) -> bool:
    try:
        return where.exists()
    except (OSError, ValueError):
        return False


def _bad_header(path: str, exists: bool, size: int, what: str) -> LogView:
    problem = LogProblem(BAD_HEADER, 1, 0, f"line 1 (byte 0): {what}")
    return LogView(path, exists, None, (), size, 0, 0, (problem,))
