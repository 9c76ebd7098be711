# The lab's own log reader on hand-made logs: header, torn tail, committed
# damage, seq gaps and duplicates.  Files, linear work and the decoder are in
# test_read_jsonl_files.py, the Hypothesis properties in
# test_read_jsonl_properties.py.
from __future__ import annotations

import pytest
from jsonl_logs import HEADER, TURN, codes, line, lines, seqs

from faultlab.lab.read.jsonl import parse_log
from faultlab.lab.read.view import (
    BAD_HEADER,
    CORRUPT_COMMITTED_LOG,
    SEQ_DUPLICATE,
    SEQ_GAP,
    LogEvent,
)

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
    good = HEADER + lines(TURN) + lines(["turn/start"], first=10, turn=1)
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

