# The bulk fast path of the JSONL reader.  The line-by-line loop of `parse_log`
# (jsonl.py) is the reference; in front of it `read_good_prefix` takes the
# common case in bulk (C-level map/set passes over blocks of lines instead of
# Python work per line; docs/log-reader.md says what a caller can see of it:
# memory, shared type strings, the garbage collector): it decodes each line with
# the same `loads` call on the same bytes, and keeps the longest prefix of lines
# that are valid events whose seq equals their index.  Those are exactly the
# lines the reference would turn into events without a problem and without
# touching any other state, so the reference resumes after them (at once, for
# an intact log or one with only a torn tail) and keeps all its diagnostics.
# A module of its own because it is the performance-sensitive part (benchmarked
# by `faultlab bench`) and is judged against the reference, not on its own.
from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator
from itertools import accumulate, repeat
from operator import add, itemgetter
from typing import Any

from faultlab.lab.read.lines import Loads, is_event
from faultlab.lab.read.view import EVENT_TYPES, LogEvent

__all__ = ["read_good_prefix"]

_NL = b"\n"

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
    keeps it off (and `read_good_prefix` then runs no collection either)."""
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
        if not is_event(obj) or obj["seq"] != index:
            return index - first
        moment = obj["time"]
        if type(moment) is int:
            try:
                float(moment)
            except OverflowError:
                return index - first
    return len(records)


def read_good_prefix(data: bytes, header_end: int, loads: Loads) -> tuple[list[LogEvent], int]:
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
