# The oracle checks added for the zoo of broken runtimes (issue 9), on
# hand-built traces and log bytes (no process): each check with an input that
# keeps the rule and one that breaks it.
#   - G4: a `turn/durable` the child went past claims its turn's `turn/end`;
#   - G9: after a failed post-step checkpoint, no request in the same turn;
#   - corrupt-committed: which line is damaged, and that the lab's own reader
#     sees it as committed damage.
from __future__ import annotations

from typing import Any

import orjson

from faultlab.lab.faults.corruption import damage_committed_line
from faultlab.lab.oracle.checks import check_crash_durability
from faultlab.lab.oracle.live import request_after_post_step
from faultlab.lab.read.jsonl import parse_log
from faultlab.lab.read.view import CORRUPT_COMMITTED_LOG

HEADER = b'{"type":"session","format":1,"id":"s","createdAt":1.0}\n'


def log_bytes(*types: str) -> bytes:
    turn = -1
    lines = [HEADER]
    for seq, kind in enumerate(types):
        turn += kind == "turn/start"
        data: dict[str, Any] = {"turn": turn}
        if kind == "turn/end":
            data["reason"] = {"kind": "completed"}
        lines.append(orjson.dumps({"seq": seq, "type": kind, "time": 1.0, "data": data}) + b"\n")
    return b"".join(lines)


ONE_TURN = ("turn/start", "user/message", "step/start", "step/end", "turn/end")


def codes(trace: list[dict[str, Any]], data: bytes) -> list[str]:
    reference = parse_log(log_bytes(*ONE_TURN), "reference")
    return [v.code for v in check_crash_durability(trace, parse_log(data, "log"), reference)]


def test_a_turn_reported_durable_must_have_its_turn_end_in_the_crashed_log() -> None:
    passed = [{"boundary": "turn/durable", "n": 1, "turn": 0}]
    assert codes(passed, log_bytes(*ONE_TURN)) == []
    assert codes(passed, log_bytes(*ONE_TURN[:-1])) == ["COMPLETED_TURN_LOST"]
    # Parked there, the child never went past it: nothing is claimed.
    assert codes([{**passed[0], "parked": True}], log_bytes(*ONE_TURN[:-1])) == []


def test_a_lost_turn_end_is_reported_once_when_a_flush_also_claimed_it() -> None:
    trace = [
        {"fact": "flush", "ok": True, "first": 0, "last": 4},
        {"boundary": "turn/durable", "n": 1, "turn": 0},
    ]
    assert codes(trace, log_bytes(*ONE_TURN[:-1])) == ["COMPLETED_TURN_LOST"]


def _post_step(*after: dict[str, Any]) -> list[str]:
    trace = ({"boundary": "step/logged", "n": 1, "parked": True}, *after)
    return [v.code for v in request_after_post_step(trace)]


FAILED = {"fact": "flush", "ok": False, "first": 9, "last": 9}
OK = {"fact": "flush", "ok": True, "first": 9, "last": 12}
REQUEST = {"boundary": "request/durable", "n": 2, "requestId": "req-t0-s1"}


def test_no_request_in_the_turn_after_a_failed_post_step_checkpoint() -> None:
    # The next flush succeeding does not excuse the request: the turn must stop.
    assert _post_step(FAILED, OK, REQUEST) == ["DISPATCH_AFTER_FAILED_CHECKPOINT"]
    # A turn that stops keeps the rule; a request of a later turn is not this turn's.
    turn_end = {"boundary": "turn/logged", "n": 1}
    assert _post_step(FAILED, turn_end, REQUEST) == []
    # The step's checkpoint succeeded (the fault hit a later flush), or there is no
    # flush between the step and the turn's end (turn-only): not this rule's case.
    assert _post_step(OK, FAILED, REQUEST) == []
    assert _post_step(turn_end, FAILED, REQUEST) == []


def test_the_damaged_line_is_the_last_closed_turns_start_and_reads_as_committed() -> None:
    data = log_bytes(*ONE_TURN, *ONE_TURN, "turn/start", "user/message")
    damage = damage_committed_line(data)
    assert damage is not None
    assert (damage.line, damage.seq) == (7, 5)  # turn 1's turn/start; turn 2 is open
    assert len(damage.data) == len(data) and damage.data.count(b"\n") == data.count(b"\n")
    lines = damage.data.split(b"\n")
    assert set(lines[damage.line - 1]) == {0}
    assert data.index(lines[damage.line - 1 + 1]) == damage.data.index(lines[damage.line])
    problems = parse_log(damage.data, "log").problems
    assert [(p.code, p.line, p.offset) for p in problems][:1] == [
        (CORRUPT_COMMITTED_LOG, damage.line, damage.offset)
    ]


def test_nothing_is_damaged_in_a_log_with_no_closed_turn() -> None:
    assert damage_committed_line(log_bytes(*ONE_TURN[:-1])) is None
