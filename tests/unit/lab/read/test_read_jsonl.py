# The lab's own log reader: header, torn tail, committed damage, seq gaps and
# duplicates, file errors, linear work, and Hypothesis properties (never
# raises; a truncated valid log reads as a prefix of its events).
from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from faultlab.lab.read.jsonl import (
    BAD_HEADER,
    CORRUPT_COMMITTED_LOG,
    EVENT_TYPES,
    SEQ_DUPLICATE,
    SEQ_GAP,
    LogEvent,
    LogView,
    parse_log,
    read_log_file,
)

HEADER = b'{"type":"session","format":1,"id":"demo","createdAt":1796010133.84}\n'


def line(seq: int, kind: str, data: dict[str, Any] | None = None, time: float = 1.5) -> bytes:
    return orjson.dumps({"seq": seq, "type": kind, "time": time, "data": data or {}}) + b"\n"


def lines(kinds: list[str], first: int = 0) -> bytes:
    return b"".join(line(first + i, kind, {"turn": 0}) for i, kind in enumerate(kinds))


TURN = [
    "turn/start",
    "user/message",
    "step/start",
    "request/header",
    "assistant/chunk",
    "assistant/message",
    "tool/call",
    "tool/result",
    "step/end",
    "turn/end",
]


def codes(view: LogView) -> list[str]:
    return [problem.code for problem in view.problems]


def seqs(view: LogView) -> list[int]:
    return [event.seq for event in view.events]


# --- good logs -----------------------------------------------------------------


def test_a_complete_log_reads_whole_with_lines_and_offsets() -> None:
    data = HEADER + lines(TURN)
    view = parse_log(data, "s.jsonl")
    assert view.path == "s.jsonl"
    assert view.exists
    assert view.header is not None and view.header["createdAt"] == 1796010133.84
    assert view.session_id == "demo"
    assert seqs(view) == list(range(10))
    assert [event.type for event in view.events] == TURN
    assert [event.line for event in view.events] == list(range(2, 12))
    offset = len(HEADER)
    for event in view.events:
        assert event.offset == offset
        offset = data.index(b"\n", offset) + 1
    assert view.size == view.valid_size == len(data)
    assert view.torn_bytes == 0
    assert view.problems == ()
    assert view.seqs_ok
    assert not view.last_turn_open


def test_event_fields_are_kept_and_unknown_fields_ignored() -> None:
    raw = (
        b'{"seq":0,"type":"user/message","time":7,'
        b'"data":{"turn":0,"message":"h\xc3\xa9","x":1},"extra":true}\n'
    )
    view = parse_log(HEADER + raw, "s")
    assert view.events == (
        LogEvent(0, "user/message", 7.0, {"turn": 0, "message": "hé", "x": 1}, 2, len(HEADER)),
    )
    assert view.problems == ()


def test_a_header_only_log_has_no_events() -> None:
    view = parse_log(HEADER, "s")
    assert view.events == () and view.problems == () and view.valid_size == len(HEADER)
    assert not view.last_turn_open


@pytest.mark.parametrize(
    ("kinds", "is_open"),
    [
        (["turn/start", "user/message"], True),
        (["turn/start", "user/message", "step/start", "step/end"], True),
        (TURN, False),
        ([*TURN, "turn/start"], True),
        (["user/message"], False),
    ],
)
def test_last_turn_open(kinds: list[str], is_open: bool) -> None:
    assert parse_log(HEADER + lines(kinds), "s").last_turn_open is is_open


# --- header ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b"", "no complete session header line"),
        (HEADER[:-1], "no complete session header line"),
        (b"not json\n", "header is not JSON"),
        (b"[1,2]\n", "not a session header"),
        (b'{"type":"turn/start","format":1,"id":"x"}\n', "not a session header"),
        (b'{"type":"session","format":2,"id":"x"}\n', "'format' is 2"),
        (b'{"type":"session","format":true,"id":"x"}\n', "'format' is True"),
        (b'{"type":"session","format":1.0,"id":"x"}\n', "'format' is 1.0"),
        (b'{"type":"session","id":"x"}\n', "'format' is missing"),
        (b'{"type":"session","format":1}\n', "'id' is missing or not a string"),
        (b'{"type":"session","format":1,"id":7}\n', "'id' is missing or not a string"),
        (b"\n" + HEADER, "header is not JSON"),
    ],
)
def test_a_bad_header_is_a_problem_at_line_one(data: bytes, why: str) -> None:
    if data.endswith(b"\n"):
        data += lines(TURN)
    view = parse_log(data, "s")
    assert codes(view) == [BAD_HEADER]
    problem = view.problems[0]
    assert (problem.line, problem.offset) == (1, 0)
    assert why in problem.message
    assert view.header is None and view.session_id is None
    assert view.events == ()
    assert (view.valid_size, view.torn_bytes) == (0, 0)
    assert not view.seqs_ok


def test_a_header_needs_only_type_format_and_id() -> None:
    view = parse_log(b'{"id":"x","format":1,"type":"session","other":[1]}\n' + lines(TURN), "s")
    assert view.problems == () and view.session_id == "x" and len(view.events) == 10


# --- torn tail and damage after the last completed turn ---------------------------


@pytest.mark.parametrize("tail", [b"{", b'{"seq":3,"ty', line(3, "step/start")[:-1]])
def test_bytes_after_the_last_newline_are_a_torn_tail_not_a_problem(tail: bytes) -> None:
    good = HEADER + lines(TURN[:3])
    view = parse_log(good + tail, "s")
    assert seqs(view) == [0, 1, 2]
    assert view.valid_size == len(good)
    assert view.torn_bytes == len(tail)
    assert view.problems == ()


def test_damage_with_no_later_turn_end_is_cut_with_everything_after_it() -> None:
    good = HEADER + lines(TURN[:4])
    rest = b"{bad\n" + line(4, "assistant/chunk") + line(5, "assistant/message") + b'{"to'
    view = parse_log(good + rest, "s")
    assert seqs(view) == [0, 1, 2, 3]
    assert view.valid_size == len(good)
    assert view.torn_bytes == len(rest)
    assert view.problems == ()


def test_damage_after_a_completed_turn_is_cut() -> None:
    good = HEADER + lines(TURN)
    view = parse_log(good + b"garbage\n" + line(11, "turn/start"), "s")
    assert seqs(view) == list(range(10))
    assert view.valid_size == len(good) and view.problems == ()


BAD_LINES = [
    (b"{bad", "not JSON"),
    (b"", "not JSON"),
    (b"\xff\xfe", "not JSON"),
    (b"[1]", "not an object"),
    (b'"text"', "not an object"),
    (b'{"type":"step/start","time":1,"data":{}}', "'seq' is missing"),
    (b'{"seq":true,"type":"step/start","time":1,"data":{}}', "'seq'"),
    (b'{"seq":4.0,"type":"step/start","time":1,"data":{}}', "'seq'"),
    (b'{"seq":"4","type":"step/start","time":1,"data":{}}', "'seq'"),
    (b'{"seq":4,"type":"step/begin","time":1,"data":{}}', "'type' is not one of"),
    (b'{"seq":4,"type":7,"time":1,"data":{}}', "'type' is not one of"),
    (b'{"seq":4,"type":["step/start"],"time":1,"data":{}}', "'type' is not one of"),
    (b'{"seq":4,"time":1,"data":{}}', "'type' is not one of"),
    (b'{"seq":4,"type":"step/start","data":{}}', "'time' is missing"),
    (b'{"seq":4,"type":"step/start","time":false,"data":{}}', "'time'"),
    (b'{"seq":4,"type":"step/start","time":"1","data":{}}', "'time'"),
    (b'{"seq":4,"type":"step/start","time":1}', "'data' is missing"),
    (b'{"seq":4,"type":"step/start","time":1,"data":[]}', "'data'"),
]


@pytest.mark.parametrize(("bad", "why"), BAD_LINES)
def test_a_bad_line_before_a_later_turn_end_is_committed_corruption(bad: bytes, why: str) -> None:
    before = HEADER + lines(TURN[:4])
    data = before + bad + b"\n" + lines(TURN[4:], first=4)
    view = parse_log(data, "s")
    assert codes(view) == [CORRUPT_COMMITTED_LOG]
    problem = view.problems[0]
    assert (problem.line, problem.offset) == (6, len(before))
    assert why in problem.message
    assert "line 6" in problem.message and f"byte {len(before)}" in problem.message
    # Nothing is dropped: reading goes on after the bad line.
    assert seqs(view) == list(range(10))
    assert view.valid_size == len(data) and view.torn_bytes == 0
    assert not view.seqs_ok


@pytest.mark.parametrize(("bad", "why"), BAD_LINES)
def test_the_same_bad_line_with_no_later_turn_end_is_cut(bad: bytes, why: str) -> None:
    before = HEADER + lines(TURN[:4])
    data = before + bad + b"\n" + lines(TURN[4:9], first=4)
    view = parse_log(data, "s")
    assert view.problems == ()
    assert seqs(view) == [0, 1, 2, 3]
    assert (view.valid_size, view.torn_bytes) == (len(before), len(data) - len(before))


@pytest.mark.parametrize(
    "later",
    [
        b'{"seq":9,"type":"turn/end","time":"late","data":{}}\n',  # not a valid event
        b'{"seq":9,"type":"turn/end","time":1,"data":{}}',  # torn: no newline
        line(9, "user/message", {"message": '"turn/end" {"type":"turn/end"}'}),
        b'{"type":"turn/end"}\n',
    ],
)
def test_only_a_complete_valid_turn_end_commits_earlier_damage(later: bytes) -> None:
    before = HEADER + lines(TURN[:4])
    view = parse_log(before + b"{bad\n" + later, "s")
    assert view.problems == ()
    assert view.valid_size == len(before)


def test_an_escaped_turn_end_still_commits_earlier_damage() -> None:
    escaped = b'{"seq":5,"type":"turn\\/end","time":1,"data":{}}\n'
    view = parse_log(HEADER + lines(TURN[:4]) + b"{bad\n" + escaped, "s")
    assert codes(view) == [CORRUPT_COMMITTED_LOG]
    assert seqs(view) == [0, 1, 2, 3, 5]


def test_a_turn_end_before_the_damage_does_not_commit_it() -> None:
    good = HEADER + lines(TURN) + lines(["turn/start"], first=10)
    view = parse_log(good + b"{bad\n", "s")
    assert view.problems == () and view.valid_size == len(good)


def test_damage_is_committed_only_up_to_the_last_turn_end() -> None:
    head = HEADER + lines(TURN[:4])
    middle = lines(TURN[4:], first=4)
    data = head + b"{one\n" + middle + b"{two\n" + lines(["turn/start"], first=10)
    view = parse_log(data, "s")
    assert codes(view) == [CORRUPT_COMMITTED_LOG]
    assert view.problems[0].line == 6
    assert "line 12" in view.problems[0].message  # names the committing turn/end
    assert seqs(view) == list(range(10))
    assert view.valid_size == len(head) + 5 + len(middle)


def test_every_committed_bad_line_is_reported() -> None:
    data = HEADER + lines(TURN[:2]) + b"{a\n[]\n" + lines(TURN[2:], first=2)
    view = parse_log(data, "s")
    assert codes(view) == [CORRUPT_COMMITTED_LOG, CORRUPT_COMMITTED_LOG]
    assert [problem.line for problem in view.problems] == [4, 5]


def test_a_corrupt_line_may_have_held_one_seq() -> None:
    head = HEADER + lines(TURN[:2])
    replaced = parse_log(head + b"{bad\n" + lines(TURN[3:], first=3), "s")
    assert codes(replaced) == [CORRUPT_COMMITTED_LOG]
    inserted = parse_log(head + b"{bad\n" + lines(TURN[2:], first=2), "s")
    assert codes(inserted) == [CORRUPT_COMMITTED_LOG]
    skipped = parse_log(head + b"{bad\n" + lines(TURN[4:], first=4), "s")
    assert codes(skipped) == [CORRUPT_COMMITTED_LOG, SEQ_GAP]
    assert "seq 4 where 2..3 was expected" in skipped.problems[1].message
    replayed = parse_log(head + b"{bad\n" + lines(TURN[1:], first=1), "s")
    assert codes(replayed) == [CORRUPT_COMMITTED_LOG, SEQ_DUPLICATE]


# --- seqs -----------------------------------------------------------------------


def test_a_seq_gap_is_reported_and_the_event_kept() -> None:
    data = HEADER + lines(TURN[:2]) + lines(TURN[2:], first=3)
    view = parse_log(data, "s")
    assert codes(view) == [SEQ_GAP]
    assert view.problems[0].line == 4
    assert "seq 3 where 2 was expected" in view.problems[0].message
    assert seqs(view) == [0, 1, *range(3, 11)]


def test_the_first_event_must_have_seq_zero() -> None:
    view = parse_log(HEADER + lines(TURN, first=1), "s")
    assert codes(view) == [SEQ_GAP]
    assert "seq 1 where 0 was expected" in view.problems[0].message


def test_a_seq_duplicate_is_reported_and_the_event_kept() -> None:
    data = HEADER + lines(TURN[:3]) + lines(TURN[3:4], first=1) + lines(TURN[4:], first=3)
    view = parse_log(data, "s")
    assert codes(view) == [SEQ_DUPLICATE]
    assert view.problems[0].line == 5
    assert "seq 1 where 3 was expected" in view.problems[0].message
    assert seqs(view) == [0, 1, 2, 1, *range(3, 9)]


def test_a_replayed_run_of_seqs_is_one_duplicate_per_line() -> None:
    data = HEADER + lines(TURN[:4]) + lines(TURN[2:], first=2)
    view = parse_log(data, "s")
    assert codes(view) == [SEQ_DUPLICATE, SEQ_DUPLICATE]
    assert [p.line for p in view.problems] == [6, 7]


def test_seq_problems_are_reported_even_without_a_later_turn_end() -> None:
    view = parse_log(HEADER + lines(TURN[:2]) + lines(TURN[2:3], first=5), "s")
    assert codes(view) == [SEQ_GAP]
    view = parse_log(HEADER + lines(TURN[:2]) + lines(TURN[2:3], first=0), "s")
    assert codes(view) == [SEQ_DUPLICATE]


# --- files -------------------------------------------------------------------------


def test_reading_a_file_equals_parsing_its_bytes(tmp_path: Path) -> None:
    data = HEADER + lines(TURN) + b'{"torn'
    path = tmp_path / "session.jsonl"
    path.write_bytes(data)
    assert read_log_file(path) == parse_log(data, str(path))
    assert read_log_file(str(path)) == parse_log(data, str(path))


@pytest.mark.parametrize("where", ["missing.jsonl", "file/inside-a-file.jsonl"])
def test_a_missing_file_exists_false_without_problems(tmp_path: Path, where: str) -> None:
    (tmp_path / "file").write_bytes(b"x")
    view = read_log_file(tmp_path / where)
    assert not view.exists
    assert view.problems == () and view.events == () and view.header is None
    assert (view.size, view.valid_size, view.torn_bytes) == (0, 0, 0)


def test_a_directory_is_a_bad_header_not_an_exception(tmp_path: Path) -> None:
    view = read_log_file(tmp_path)
    assert view.exists
    assert codes(view) == [BAD_HEADER]
    assert "directory" in view.problems[0].message


def test_an_unreadable_path_is_a_bad_header_not_an_exception(tmp_path: Path) -> None:
    view = read_log_file(str(tmp_path / "nul\0byte"))
    assert codes(view) == [BAD_HEADER]
    assert "cannot read" in view.problems[0].message


def test_an_empty_file_is_a_bad_header(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    path.write_bytes(b"")
    view = read_log_file(path)
    assert view.exists and codes(view) == [BAD_HEADER]


# --- linear work -----------------------------------------------------------------------


def counting_loads() -> tuple[list[int], Callable[[bytes], Any]]:
    calls = [0]

    def loads(raw: bytes) -> Any:
        calls[0] += 1
        return orjson.loads(raw)

    return calls, loads


def test_many_committed_bad_lines_cost_linear_work() -> None:
    n = 3000
    data = HEADER + lines(TURN[:1]) + b"{bad\n" * n + lines(TURN[1:], first=1)
    calls, loads = counting_loads()
    view = parse_log(data, "s", loads=loads)
    assert len(view.problems) == n
    lines_in_file = data.count(b"\n")
    assert 0 < calls[0] <= 2 * lines_in_file + 2


def test_damage_near_the_end_of_a_big_log_scans_back_only_to_it() -> None:
    body = b"".join(line(i, "assistant/chunk", {"turn": 0}) for i in range(5000))
    data = HEADER + body + b"{bad\n" + b"{worse\n" * 3
    calls, loads = counting_loads()
    view = parse_log(data, "s", loads=loads)
    assert view.problems == () and len(view.events) == 5000
    assert calls[0] <= 5000 + 1 + 1 + 3 + 1


# --- the decoder -------------------------------------------------------------------


def test_the_standard_library_decoder_reads_the_same_log(tmp_path: Path) -> None:
    # `faultlab bench` compares orjson with json: both must see the same log,
    # including a committed bad line (the later turn/end scan) and a torn tail.
    data = (
        HEADER
        + lines(TURN[:3])
        + line(3, "request/header", {"turn": 0, "step": 0, "envelope": {"digest": "ab"}})
        + line(4, "assistant/chunk", {"turn": 0, "step": 0, "index": 0, "delta": "héllo \u2028"})
        + b"{bad\n"
        + lines(TURN[6:], first=6)
        + lines(TURN[:2], first=10)
        + b'{"seq":12,"ty'
    )
    path = tmp_path / "session.jsonl"
    path.write_bytes(data)
    fast, slow = parse_log(data, "s"), parse_log(data, "s", loads=json.loads)
    assert slow.events == fast.events and slow.header == fast.header
    assert (slow.size, slow.valid_size, slow.torn_bytes) == (
        fast.size,
        fast.valid_size,
        fast.torn_bytes,
    )
    # The decoders word their errors differently; where and what is the same.
    where = [(p.code, p.line, p.offset) for p in fast.problems]
    assert [(p.code, p.line, p.offset) for p in slow.problems] == where
    assert codes(slow) == [CORRUPT_COMMITTED_LOG] and slow.torn_bytes == len(b'{"seq":12,"ty')
    assert [event.seq for event in slow.events] == [0, 1, 2, 3, 4, 6, 7, 8, 9, 10, 11]
    assert read_log_file(path, loads=json.loads).events == fast.events
    bad_header = b"{nope\n" + lines(TURN)
    assert codes(parse_log(bad_header, "s", loads=json.loads)) == [BAD_HEADER]


# --- properties ----------------------------------------------------------------------

TYPES = sorted(EVENT_TYPES)
texts = st.text(alphabet=st.characters(codec="utf-8"), max_size=12) | st.sampled_from(
    ["turn/end", '"turn/end"', "\n", "\\", '{"type":"turn/end"}', "é\u2028"]
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
event_specs = st.lists(
    st.tuples(
        st.sampled_from(TYPES),
        st.floats(min_value=0, max_value=2e9, allow_nan=False),
        st.dictionaries(texts, json_values, max_size=2),
    ),
    max_size=8,
)


def encode(specs: list[tuple[str, float, dict[str, Any]]]) -> tuple[bytes, list[int]]:
    """A valid log and the end offset of each event line."""
    data = bytearray(HEADER)
    ends = []
    for seq, (kind, time, payload) in enumerate(specs):
        data += line(seq, kind, payload, time)
        ends.append(len(data))
    return bytes(data), ends


def check_invariants(view: LogView, data: bytes) -> None:
    assert view.size == len(data)
    if BAD_HEADER in codes(view):
        assert codes(view) == [BAD_HEADER]
        assert view.events == () and view.valid_size == 0 and view.torn_bytes == 0
        return
    assert 0 < view.valid_size <= view.size
    assert view.valid_size + view.torn_bytes == view.size
    assert data[view.valid_size - 1 : view.valid_size] == b"\n"
    previous = 1
    for event in view.events:
        assert event.line > previous
        previous = event.line
        assert event.offset < view.valid_size
        assert data[event.offset - 1 : event.offset] == b"\n"
        assert event.type in EVENT_TYPES
    for problem in view.problems:
        assert problem.code in {CORRUPT_COMMITTED_LOG, SEQ_GAP, SEQ_DUPLICATE}
        assert problem.offset < view.valid_size


@settings(max_examples=300)
@given(st.binary(max_size=300))
def test_arbitrary_bytes_never_raise(data: bytes) -> None:
    check_invariants(parse_log(data, "s"), data)


@settings(max_examples=300)
@given(st.lists(st.binary(max_size=40) | st.sampled_from([line(0, "turn/end")[:-1]]), max_size=8))
def test_arbitrary_lines_after_a_good_header_never_raise(chunks: list[bytes]) -> None:
    data = HEADER + b"\n".join(chunks)
    check_invariants(parse_log(data, "s"), data)


@settings(max_examples=150)
@given(event_specs, st.data())
def test_a_valid_log_cut_at_any_byte_reads_as_a_prefix(
    specs: list[tuple[str, float, dict[str, Any]]], draw: st.DataObject
) -> None:
    data, ends = encode(specs)
    whole = parse_log(data, "s")
    assert whole.problems == () and len(whole.events) == len(specs)
    cut = draw.draw(st.integers(0, len(data)))
    view = parse_log(data[:cut], "s")
    check_invariants(view, data[:cut])
    if cut < len(HEADER):
        assert codes(view) == [BAD_HEADER]
        return
    kept = sum(1 for end in ends if end <= cut)
    assert view.problems == ()
    assert view.events == whole.events[:kept]
    assert view.valid_size == (ends[kept - 1] if kept else len(HEADER))
    assert view.torn_bytes == cut - view.valid_size


@settings(max_examples=150)
@given(event_specs.filter(bool), st.data())
def test_a_bit_flip_never_raises_and_keeps_the_lines_before_it(
    specs: list[tuple[str, float, dict[str, Any]]], draw: st.DataObject
) -> None:
    data, ends = encode(specs)
    whole = parse_log(data, "s")
    where = draw.draw(st.integers(0, len(data) - 1))
    bit = draw.draw(st.integers(0, 7))
    flipped = bytearray(data)
    flipped[where] ^= 1 << bit
    view = parse_log(bytes(flipped), "s")
    check_invariants(view, bytes(flipped))
    if where >= len(HEADER):
        before = sum(1 for end in ends if end <= where)
        assert view.events[:before] == whole.events[:before]


@settings(max_examples=100)
@given(event_specs.filter(lambda specs: len(specs) >= 2), st.data())
def test_a_damaged_line_before_a_turn_end_is_always_reported(
    specs: list[tuple[str, float, dict[str, Any]]], draw: st.DataObject
) -> None:
    specs = [*specs, ("turn/end", 1.0, {})]
    data, ends = encode(specs)
    index = draw.draw(st.integers(0, len(specs) - 2))
    start = ends[index - 1] if index else len(HEADER)
    damaged = data[:start] + b"#" + data[start:]  # '#' can start no JSON value
    view = parse_log(damaged, "s")
    assert codes(view) == [CORRUPT_COMMITTED_LOG]
    assert view.problems[0].offset == start
    assert view.problems[0].line == index + 2
    assert [event.seq for event in view.events] == [i for i in range(len(specs)) if i != index]
