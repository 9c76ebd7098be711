# The claims issue 19 added to the oracle, on hand-built traces and log bytes
# (no process): each with an input that keeps the rule and one that breaks it.
#   - G4: a `step/durable` the child went past claims its step's `step/end`;
#   - G10: which calls a log leaves unanswered (nested ones too);
#   - G5: a cut tail must be kept, byte for byte, in a cut file for its offset.
from __future__ import annotations

from typing import Any

import orjson

from faultlab.lab.oracle.checks import check_crash_durability
from faultlab.lab.oracle.claims import cut_tail_lost, unanswered_calls
from faultlab.lab.read.jsonl import parse_log

HEADER = b'{"type":"session","format":1,"id":"s","createdAt":1.0}\n'


def log_bytes(*events: tuple[str, dict[str, Any]]) -> bytes:
    lines = [HEADER]
    for seq, (kind, data) in enumerate(events):
        lines.append(orjson.dumps({"seq": seq, "type": kind, "time": 1.0, "data": data}) + b"\n")
    return b"".join(lines)


STEP0 = [
    ("turn/start", {"turn": 0}),
    ("user/message", {"turn": 0, "message": "hi"}),
    ("step/start", {"turn": 0, "step": 0}),
    ("step/end", {"turn": 0, "step": 0}),
]
REFERENCE = parse_log(log_bytes(*STEP0, ("turn/end", {"turn": 0})), "reference")
PASSED = {"boundary": "step/durable", "n": 1, "turn": 0, "step": 0}


def durability(trace: list[dict[str, Any]], *events: tuple[str, dict[str, Any]]) -> list[str]:
    crashed = parse_log(log_bytes(*events), "crashed")
    return [v.code for v in check_crash_durability(trace, crashed, REFERENCE)]


def test_a_step_reported_durable_must_have_its_step_end_in_the_crashed_log() -> None:
    assert durability([PASSED], *STEP0) == []
    assert durability([PASSED], *STEP0[:-1]) == ["SETTLED_STEP_LOST"]
    # Another step's step/end does not count: the claim names turn and step.
    other = ("step/end", {"turn": 0, "step": 1})
    assert durability([PASSED], *STEP0[:-1], other) == ["SETTLED_STEP_LOST"]
    # Parked there, the child never went past it: nothing is claimed.
    assert durability([{**PASSED, "parked": True}], *STEP0[:-1]) == []


def test_a_lost_step_end_is_reported_once_when_a_flush_also_claimed_it() -> None:
    trace = [{"fact": "flush", "ok": True, "first": 0, "last": 3}, PASSED]
    assert durability(trace, *STEP0[:-1]) == ["SETTLED_STEP_LOST"]


def _message(*ids: str) -> dict[str, Any]:
    blocks = [{"type": "tool-call", "id": i, "name": "t", "arguments": {}} for i in ids]
    return {"turn": 0, "step": 0, "message": {"role": "assistant", "content": blocks}}


def test_unanswered_calls_are_every_asked_call_without_a_result() -> None:
    events = parse_log(log_bytes(
        ("assistant/message", _message("a", "b")),
        ("tool/call", {"callId": "a"}),
        ("tool/call", {"callId": "a.0", "parentCallId": "a"}),
        ("tool/result", {"callId": "a"}),
        ("turn/end", {"turn": 0, "reason": {"kind": "cancelled"}}),
    ), "log").events  # fmt: skip
    # b was never dispatched, a.0 (nested) never returned: both are dangling.
    assert unanswered_calls(events) == ["b", "a.0"]
    answered = parse_log(log_bytes(
        ("assistant/message", _message("a")), ("tool/call", {"callId": "a"}),
        ("tool/result", {"callId": "a"}),
    ), "log").events  # fmt: skip
    assert unanswered_calls(answered) == []


def test_a_cut_tail_must_be_kept_in_a_cut_file_for_its_offset() -> None:
    data = log_bytes(*STEP0) + b'{"seq":4,"ty'
    crashed = parse_log(data, "session.jsonl")
    offset, tail = crashed.valid_size, data[crashed.valid_size :]
    assert crashed.torn_bytes == len(tail) > 0

    def lost(files: dict[str, bytes]) -> list[str]:
        return [v.code for v in cut_tail_lost(crashed, data, files, "session.jsonl")]

    assert lost({f"session.jsonl.cut-{offset}": tail}) == []
    assert lost({f"session.jsonl.cut-{offset}.1": tail}) == []  # a numbered later cut
    assert lost({}) == ["CUT_TAIL_LOST"]
    assert lost({f"session.jsonl.cut-{offset}": tail[:-1]}) == ["CUT_TAIL_LOST"]
    assert lost({f"session.jsonl.cut-{offset + 1}": tail}) == ["CUT_TAIL_LOST"]
    # Nothing to cut, nothing to keep.
    whole = log_bytes(*STEP0)
    assert cut_tail_lost(parse_log(whole, "s"), whole, {}, "session.jsonl") == []
