# The reader's identity checks (issue 19): a turn number with two turn/start,
# a request id with two request/header are problems of both readers (JSONL on
# its fast path and its reference loop alike, SQLite), one report per line,
# and `faultlab inspect` shows them.
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from jsonl_logs import HEADER, codes, line

from faultlab.lab.read.jsonl import parse_log
from faultlab.lab.read.sqlite import read_sqlite_file
from faultlab.lab.read.view import REQUEST_DUPLICATE, SEQ_DUPLICATE, TURN_DUPLICATE
from faultlab.lab.report.inspect import inspect_log
from faultlab.runtime.backends.sqlite import SqliteBackend
from faultlab.runtime.events import Event


def turn(number: int, request: str) -> list[tuple[str, dict[str, Any]]]:
    return [
        ("turn/start", {"turn": number}),
        ("request/header", {"turn": number, "step": 0, "requestId": request}),
        ("turn/end", {"turn": number, "reason": {"kind": "completed"}}),
    ]


def log(*turns: list[tuple[str, dict[str, Any]]]) -> bytes:
    events = [event for t in turns for event in t]
    return HEADER + b"".join(line(seq, kind, data) for seq, (kind, data) in enumerate(events))


@pytest.mark.parametrize("fast", [True, False])
def test_distinct_turns_and_requests_are_clean(fast: bool) -> None:
    assert parse_log(log(turn(0, "r0"), turn(1, "r1")), "s", fast=fast).problems == ()


@pytest.mark.parametrize("fast", [True, False])
def test_a_repeated_turn_number_is_a_problem_at_its_second_turn_start(fast: bool) -> None:
    view = parse_log(log(turn(0, "r0"), turn(0, "r1")), "s", fast=fast)
    assert codes(view) == [TURN_DUPLICATE]
    assert view.problems[0].line == 5  # header, then seqs 0..2, then the second turn/start
    assert "turn 0 (seq 3) repeats the one at line 2 (seq 0)" in view.problems[0].message
    assert len(view.events) == 6  # a problem, not a cut: every event is still read


@pytest.mark.parametrize("fast", [True, False])
def test_a_repeated_request_id_is_a_problem(fast: bool) -> None:
    view = parse_log(log(turn(0, "req"), turn(1, "req")), "s", fast=fast)
    assert codes(view) == [REQUEST_DUPLICATE]
    assert view.problems[0].line == 6 and "'req'" in view.problems[0].message


def test_a_repeated_seq_is_reported_once_not_also_as_a_repeated_turn() -> None:
    data = HEADER + line(0, "turn/start", {"turn": 0}) + line(0, "turn/start", {"turn": 0})
    assert codes(parse_log(data, "s")) == [SEQ_DUPLICATE]


def test_identities_of_other_json_types_are_not_compared() -> None:
    # The format's turn is an integer and a request id a string: a malformed
    # field is no identity (True == 1 in Python must not make a duplicate).
    data = HEADER + line(0, "turn/start", {"turn": 1}) + line(1, "turn/start", {"turn": True})
    assert codes(parse_log(data, "s")) == []


def test_the_sqlite_reader_reports_them_too(tmp_path: Path) -> None:
    backend = SqliteBackend(tmp_path / "s")
    backend.open(session_id="lab", create=True, resume=False)
    events = [(k, d) for t in (turn(0, "r0"), turn(0, "r0")) for k, d in t]
    backend.append_batch([Event(seq, kind, 1.5, data) for seq, (kind, data) in enumerate(events)])
    backend.sync()
    backend.close()
    view = read_sqlite_file(tmp_path / "s" / "session.sqlite")
    assert codes(view) == [TURN_DUPLICATE, REQUEST_DUPLICATE]


def test_inspect_shows_them(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    path.write_bytes(log(turn(0, "r0"), turn(0, "r0")))
    found = inspect_log(path)
    assert not found.healthy
    shown = "\n".join(found.lines)
    assert "TURN_DUPLICATE: line 5" in shown and "REQUEST_DUPLICATE: line 6" in shown
    assert [p["code"] for p in found.data["problems"]] == [TURN_DUPLICATE, REQUEST_DUPLICATE]
