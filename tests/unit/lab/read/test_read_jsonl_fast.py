# The log reader's bulk fast path against its line-by-line reference loop:
# `parse_log(..., fast=True)` must give the very same LogView (events,
# problems, sizes, header) as `fast=False` on valid logs, cut logs and logs
# with damaged lines, with orjson and with the standard library's json, and
# raise the same exception where the reference raises one.  Also: the GC state
# is restored, and expected repair looks only at the last turn of a big log.
from __future__ import annotations

import gc
import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any, overload

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from faultlab.lab.oracle.expected import expected_repair
from faultlab.lab.read import fastpath
from faultlab.lab.read.fastpath import read_good_prefix
from faultlab.lab.read.jsonl import parse_log
from faultlab.lab.read.view import (
    CORRUPT_COMMITTED_LOG,
    EVENT_TYPES,
    SEQ_DUPLICATE,
    SEQ_GAP,
    LogEvent,
    LogView,
)
from faultlab.scenario import ToolSpec

HEADER = b'{"type":"session","format":1,"id":"demo","createdAt":1796010133.84}\n'
TYPES = sorted(EVENT_TYPES)
LOADS: list[Callable[[bytes], Any]] = [orjson.loads, json.loads]


def line(seq: object, kind: object, data: object = None, time: object = 1.5) -> bytes:
    record = {"seq": seq, "type": kind, "time": time, "data": {} if data is None else data}
    return orjson.dumps(record) + b"\n"


def outcome(data: bytes, loads: Callable[[bytes], Any], *, fast: bool) -> tuple[str, Any]:
    """The view (as its repr: NaN-safe and type-exact) or the exception."""
    try:
        view = parse_log(data, "s.jsonl", loads=loads, fast=fast)
    except Exception as exc:  # the reference itself raises on some inputs
        return "raises", (type(exc), str(exc))
    for event in view.events:
        assert type(event) is LogEvent
    return "view", repr(view)


def assert_same(data: bytes, loads: Callable[[bytes], Any] = orjson.loads) -> None:
    fast, slow = outcome(data, loads, fast=True), outcome(data, loads, fast=False)
    assert fast == slow
    if fast[0] == "view":
        a = parse_log(data, "s.jsonl", loads=loads)
        b = parse_log(data, "s.jsonl", loads=loads, fast=False)
        assert (a.size, a.valid_size, a.torn_bytes, a.problems) == (
            b.size,
            b.valid_size,
            b.torn_bytes,
            b.problems,
        )
        assert len(a.events) == len(b.events)


# --- strategies ----------------------------------------------------------------------

texts = st.text(alphabet=st.characters(codec="utf-8"), max_size=10) | st.sampled_from(
    ["turn/end", '"turn/end"', "\n", "\\", "é\u2028", '{"seq":1}']
)
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=4,
)
payloads = st.dictionaries(texts, json_values, max_size=2)
times = st.floats(min_value=0, max_value=2e9, allow_nan=False) | st.integers(0, 2**40)

# Lines that are not a good event where they stand: not JSON, JSON that is not
# an event, events with bad fields, two objects on one line, an array or object
# split over two lines, a huge integer time (json decodes it; float() cannot).
ODD_LINES = [
    b"",
    b" ",
    b"{bad",
    b"#",
    b"\xff\xfe",
    b"[1]",
    b'"text"',
    b"1",
    b"null",
    b'{"seq":0}',
    b'{"seq":true,"type":"turn/end","time":1,"data":{}}',
    b'{"seq":1.0,"type":"turn/end","time":1,"data":{}}',
    b'{"seq":1,"type":"turn/stop","time":1,"data":{}}',
    b'{"seq":1,"type":["turn/end"],"time":1,"data":{}}',
    b'{"seq":1,"type":"turn/end","time":"1","data":{}}',
    b'{"seq":1,"type":"turn/end","time":true,"data":{}}',
    b'{"seq":1,"type":"turn/end","time":1,"data":[]}',
    b'{"seq":1,"type":"turn/end","time":NaN,"data":{}}',
    b'{"seq":1,"type":"turn/end","time":1e400,"data":{}}',
    b'{"seq":1,"type":"turn/end","time":' + b"9" * 400 + b',"data":{}}',
    b'{"seq":1,"type":"turn/end","time":1,"data":{}},{"seq":2,"type":"turn/end","time":1,"data":{}}',
    b'{"seq":1,"type":"turn/end","time":1,"data":{"x":[1',
    b"2]}}",
    b'\xef\xbb\xbf{"seq":1,"type":"turn/end","time":1,"data":{}}',
    b' {"seq":1,"type":"turn/end","time":1,"data":{}}\r',
]

odd_lines = st.sampled_from(ODD_LINES) | st.binary(max_size=30).map(
    lambda raw: raw.replace(b"\n", b"")
)
# Event lines whose seq equals the expected one but in a wrong JSON type or
# spelling (true and false are 1 and 0 to Python's ==), or a seq out of order.
ODD_SEQS = [b"%d.0", b"true", b"false", b'"%d"', b"[%d]", b"%d", b"-1"]


def odd_seq_line(seq: int, spelling: bytes, kind: str) -> bytes:
    text = spelling % seq if b"%d" in spelling else spelling
    return b'{"seq":%s,"type":"%s","time":1.5,"data":{}}' % (text, kind.encode())


@st.composite
def logs(draw: st.DrawFn, *, damaged: bool) -> bytes:
    """A log whose lines are good events with running seqs; with `damaged`,
    some lines are odd or carry a wrong seq; then an optional torn tail."""
    out = bytearray(HEADER)
    seq = 0
    for _ in range(draw(st.integers(0, 10))):
        what = draw(st.sampled_from(["good"] * 4 + (["odd", "seq", "spelling"] if damaged else [])))
        if what == "odd":
            out += draw(odd_lines) + b"\n"
            continue
        if what == "spelling":
            spelling = draw(st.sampled_from(ODD_SEQS))
            out += odd_seq_line(seq, spelling, draw(st.sampled_from(TYPES))) + b"\n"
            seq += spelling == b"%d"
            continue
        kind = draw(st.sampled_from(TYPES))
        at = seq + (draw(st.sampled_from([-2, -1, 1, 2, 5])) if what == "seq" else 0)
        out += line(at, kind, draw(payloads), draw(times))
        seq = max(seq, at) + 1
    out += draw(st.sampled_from([b"", b"{", b'{"seq":', line(seq, "turn/end")[:-1]]))
    return bytes(out)


# Generated logs are large: on a loaded machine Hypothesis' "input generation
# is slow" health check fires though nothing is wrong; every other check stays.


# --- equivalence ---------------------------------------------------------------------


@pytest.mark.parametrize("loads", LOADS, ids=["orjson", "json"])
@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=100)
@given(data=logs(damaged=False))
def test_a_valid_log_reads_the_same_on_both_paths(
    loads: Callable[[bytes], Any], data: bytes
) -> None:
    assert_same(data, loads)
    view = parse_log(data, "s", loads=loads)
    assert view.problems == ()


@pytest.mark.parametrize("loads", LOADS, ids=["orjson", "json"])
@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=100)
@given(data=logs(damaged=False), cut=st.floats(0, 1))
def test_a_truncated_log_reads_the_same_on_both_paths(
    loads: Callable[[bytes], Any], data: bytes, cut: float
) -> None:
    assert_same(data[: int(len(data) * cut)], loads)


@pytest.mark.parametrize("loads", LOADS, ids=["orjson", "json"])
@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=150)
@given(data=logs(damaged=True))
def test_a_damaged_log_reads_the_same_on_both_paths(
    loads: Callable[[bytes], Any], data: bytes
) -> None:
    assert_same(data, loads)


@pytest.mark.parametrize("loads", LOADS, ids=["orjson", "json"])
@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=100)
@given(data=logs(damaged=False), where=st.floats(0, 1), odd=odd_lines)
def test_one_damaged_line_reads_the_same_on_both_paths(
    loads: Callable[[bytes], Any], data: bytes, where: float, odd: bytes
) -> None:
    # Replace one whole line (maybe the header) and keep a turn/end after it.
    rows = data.split(b"\n")
    index = int(where * (len(rows) - 1))
    rows[index] = odd
    damaged = b"\n".join(rows)
    assert_same(damaged, loads)
    assert_same(damaged + b"\n" + line(10**6, "turn/end"), loads)


@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=100)
@given(data=logs(damaged=False), where=st.data())
def test_a_bit_flip_reads_the_same_on_both_paths(data: bytes, where: st.DataObject) -> None:
    at = where.draw(st.integers(0, len(data) - 1))
    flipped = bytearray(data)
    flipped[at] ^= 1 << where.draw(st.integers(0, 7))
    assert_same(bytes(flipped))


@pytest.mark.parametrize("window", [1, 2, 80, 200])
@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=60)
@given(data=logs(damaged=True), cut=st.floats(0, 1))
def test_blocks_of_any_size_read_the_same(window: int, data: bytes, cut: float) -> None:
    # The fast path works on the lines of one window of bytes at a time (256 KiB
    # in use, more than these logs hold): with tiny windows, every kind of line
    # falls on a block boundary, first and last in a block, a line is longer
    # than the window, and a block may end the good prefix.
    saved = fastpath._WINDOW
    fastpath._WINDOW = window
    try:
        for loads in LOADS:
            assert_same(data, loads)
            assert_same(data[: int(len(data) * cut)], loads)
    finally:
        fastpath._WINDOW = saved


@pytest.mark.parametrize("window", [1, 80, 200])
@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=40)
@given(data=logs(damaged=False), cut=st.floats(0, 1))
def test_the_fast_path_takes_every_line_of_a_valid_log_whatever_the_window(
    window: int, data: bytes, cut: float
) -> None:
    data = data[: max(len(HEADER), int(len(data) * cut))]
    saved = fastpath._WINDOW
    fastpath._WINDOW = window
    try:
        events, end = read_good_prefix(data, len(HEADER) - 1, orjson.loads)
    finally:
        fastpath._WINDOW = saved
    reference = parse_log(data, "s", fast=False)
    assert events == list(reference.events) and end == reference.valid_size


def test_each_event_type_is_one_shared_string() -> None:
    data = HEADER + b"".join(line(i, TYPES[i % 10]) for i in range(100))
    for loads in LOADS:
        fast = parse_log(data, "s", loads=loads)
        assert repr(fast) == repr(parse_log(data, "s", loads=loads, fast=False))
        assert len({id(event.type) for event in fast.events}) == len(TYPES)


# --- decoders that are not orjson or json ----------------------------------------------


class OddDict(dict[str, Any]):
    pass


class OddStr(str):
    __slots__ = ()


def tricky_loads(raw: bytes) -> Any:
    """orjson, but a line marked "sub" decodes to a dict subclass, "strsub" to a
    str-subclass type, "boom" raises a TypeError (not a decode error)."""
    obj = orjson.loads(raw)
    if isinstance(obj, dict):
        mark = obj.get("data", {}).get("mark") if isinstance(obj.get("data"), dict) else None
        if mark == "sub":
            return OddDict(obj)
        if mark == "strsub":
            obj["type"] = OddStr(obj["type"])
        if mark == "boom":
            raise TypeError(f"boom at seq {obj.get('seq')}")
    return obj


@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=100)
@given(
    marks=st.lists(st.sampled_from([None, None, None, "sub", "strsub", "boom"]), max_size=8),
    end=st.booleans(),
)
def test_a_decoder_returning_subclasses_or_raising_reads_the_same(
    marks: list[str | None], end: bool
) -> None:
    data = HEADER + b"".join(
        line(i, "assistant/chunk", {} if mark is None else {"mark": mark})
        for i, mark in enumerate(marks)
    )
    if end:
        data += line(len(marks), "turn/end")
    assert_same(data, tricky_loads)


def test_a_huge_integer_time_raises_the_same_on_both_paths() -> None:
    # The reference's float() of a time json decoded as a 400-digit int raises
    # OverflowError; the fast path leaves that line to it and changes nothing.
    huge = b'{"seq":1,"type":"turn/end","time":' + b"9" * 400 + b',"data":{}}\n'
    data = HEADER + line(0, "turn/start") + huge
    fast, slow = outcome(data, json.loads, fast=True), outcome(data, json.loads, fast=False)
    assert fast == slow == ("raises", (OverflowError, "int too large to convert to float"))


# --- the fast path itself ----------------------------------------------------------------


def test_the_fast_path_reads_an_intact_log_with_a_torn_tail_in_one_go() -> None:
    body = b"".join(line(i, TYPES[i % 10], {"i": i}, 1.0 + i) for i in range(50))
    data = HEADER + body + b'{"seq":50,"ty'
    events, end = read_good_prefix(data, len(HEADER) - 1, orjson.loads)
    assert end == len(HEADER) + len(body)
    assert events == list(parse_log(data, "s", fast=False).events)
    offset = len(HEADER)
    for i, event in enumerate(events):
        expected = LogEvent(i, TYPES[i % 10], 1.0 + i, {"i": i}, i + 2, offset)
        assert event == expected and repr(event) == repr(expected)
        offset = data.index(b"\n", offset) + 1
    with pytest.raises(AttributeError):  # immutable, like every event the slow path makes
        events[0].seq = 5  # type: ignore[misc]


def test_the_fast_path_stops_at_the_first_line_it_cannot_take() -> None:
    good = HEADER + b"".join(line(i, "assistant/chunk") for i in range(5))
    for odd in (b"{bad\n", b"[1]\n", line(7, "assistant/chunk"), line(3, "assistant/chunk")):
        data = good + odd + line(6, "assistant/chunk") + line(7, "turn/end")
        events, end = read_good_prefix(data, len(HEADER) - 1, orjson.loads)
        assert [event.seq for event in events] == [0, 1, 2, 3, 4] and end == len(good)
        view = parse_log(data, "s")
        assert repr(view) == repr(parse_log(data, "s", fast=False))
        assert view.problems[0].offset == len(good)
        assert view.problems[0].code in {CORRUPT_COMMITTED_LOG, SEQ_GAP, SEQ_DUPLICATE}


def test_int_times_become_floats_on_the_fast_path() -> None:
    data = HEADER + line(0, "turn/start", time=7) + line(1, "turn/end", time=2.5)
    view = parse_log(data, "s")
    assert [(type(e.time), e.time) for e in view.events] == [(float, 7.0), (float, 2.5)]
    assert repr(view) == repr(parse_log(data, "s", fast=False))


@pytest.mark.parametrize("enabled", [True, False])
def test_the_gc_state_is_restored(enabled: bool) -> None:
    data = HEADER + b"".join(line(i, "assistant/chunk") for i in range(100))
    was = gc.isenabled()
    try:
        gc.enable() if enabled else gc.disable()
        assert len(parse_log(data, "s").events) == 100
        assert gc.isenabled() is enabled

        def interrupted(raw: bytes) -> Any:
            if b'"seq":50' in raw:
                raise KeyboardInterrupt
            return orjson.loads(raw)

        with pytest.raises(KeyboardInterrupt):
            parse_log(data, "s", loads=interrupted)
        assert gc.isenabled() is enabled
    finally:
        gc.enable() if was else gc.disable()


def _in_young_generations(events: Sequence[LogEvent]) -> int:
    young = {id(obj) for generation in (0, 1) for obj in gc.get_objects(generation)}
    return sum(id(event) in young for event in events)


def test_a_big_log_s_events_leave_the_young_generations_block_by_block() -> None:
    # Each block's events are swept once, while hot, and moved to the oldest
    # generation, the last block's too: none is left for the young collections.
    data = HEADER + b"".join(line(i, "assistant/chunk", {"i": i}) for i in range(60))
    saved, was = fastpath._WINDOW, gc.isenabled()
    fastpath._WINDOW = 300  # about five lines a block
    try:
        gc.enable()
        events = parse_log(data, "s").events
        assert len(events) == 60
        assert _in_young_generations(events) == 0
        # ...and with the collector off, the reader runs no collection at all.
        gc.disable()
        before = [stats["collections"] for stats in gc.get_stats()]
        events = parse_log(data, "s").events
        assert [stats["collections"] for stats in gc.get_stats()] == before
        assert len(events) == 60 and _in_young_generations(events) == 60
    finally:
        fastpath._WINDOW = saved
        gc.enable() if was else gc.disable()


# --- expected repair looks at the last turn only -----------------------------------------


class CountingEvents(Sequence[LogEvent]):
    """A sequence of events that counts the single events read from it."""

    def __init__(self, events: list[LogEvent]) -> None:
        self.events = events
        self.reads = 0

    def __len__(self) -> int:
        return len(self.events)

    @overload
    def __getitem__(self, index: int) -> LogEvent: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[LogEvent]: ...
    def __getitem__(self, index: int | slice) -> LogEvent | Sequence[LogEvent]:
        if isinstance(index, slice):
            part = self.events[index]
            self.reads += len(part)
            return part
        self.reads += 1
        return self.events[index]

    def __iter__(self) -> Iterator[LogEvent]:
        raise AssertionError("expected_repair must not walk the whole log")


def test_expected_repair_of_a_big_log_reads_only_its_last_turn() -> None:
    kinds = ["turn/start", "user/message", "step/start", "assistant/chunk", "turn/end"]
    events = [LogEvent(i, kinds[i % 5], 1.0, {"turn": i // 5}, i + 2, i) for i in range(100_000)]
    seq = len(events)
    tail = [
        LogEvent(seq, "turn/start", 1.0, {"turn": 99}, 0, 0),
        LogEvent(seq + 1, "step/start", 1.0, {"step": 0}, 0, 0),
        LogEvent(
            seq + 2,
            "assistant/message",
            1.0,
            {"message": {"content": [{"type": "tool-call", "id": "c1", "name": "read"}]}},
            0,
            0,
        ),
        LogEvent(seq + 3, "tool/call", 1.0, {"callId": "c1", "name": "read"}, 0, 0),
    ]
    counted = CountingEvents(events + tail)
    repair = expected_repair(counted, {"read": ToolSpec(name="read", read_only=True)})
    assert [(r.call_id, r.cites, r.retry) for r in repair.results] == [("c1", seq + 3, "safe")]
    assert (repair.close_step, repair.close_turn) == (0, 99)
    assert counted.reads <= 3 * len(tail)


def test_views_compare_by_value() -> None:
    # LogView equality is what the properties above rely on besides repr.
    data = HEADER + line(0, "turn/start") + line(1, "turn/end")
    assert parse_log(data, "s") == parse_log(data, "s", fast=False)
    assert isinstance(parse_log(data, "s"), LogView)
