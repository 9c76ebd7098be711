# The claims issues 19 and 30 added to the oracle, on hand-built traces and log bytes
# (no process): each with an input that keeps the rule and one that breaks it.
#   - G4: a `step/durable` the child went past claims its step's `step/end`;
#   - G10: which calls a log leaves unanswered (nested ones too);
#   - G5: a cut tail must be kept, byte for byte, in a cut file for its offset;
#   - G4 (issue 30): a repair the child went past `repair/durable` for is in the log;
#   - G5 (issue 30): at every moment of a recovery the cut bytes are durable
#     somewhere, in the log or in a durable cut file.
from __future__ import annotations

from typing import Any

import orjson

from faultlab.lab.oracle.checks import check_crash_durability
from faultlab.lab.oracle.claims import cut_tail_lost, repair_lost, tail_not_kept, unanswered_calls
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


# Issue 30: the recovery's own claims.


def test_a_repair_reported_durable_must_be_in_the_log() -> None:
    repair = [("tool/result", {"callId": "a"}), ("turn/end", {"turn": 0})]
    events = parse_log(log_bytes(*STEP0, *repair), "log").events
    claim = {"boundary": "repair/durable", "n": 1, "first": 4, "count": 2}
    assert repair_lost([claim], events) == []
    lost = repair_lost([claim], events[:5])  # the turn/end (seq 5) is gone
    assert [(v.code, v.evidence["missing"]) for v in lost] == [("REPAIR_LOST", [5])]
    # Parked at the boundary it never went past: not yet a claim.
    assert repair_lost([{**claim, "parked": True}], events[:4]) == []
    assert repair_lost([{"boundary": "repair/logged", "n": 1, "first": 4, "count": 2}],
                       events[:4]) == []  # fmt: skip


def test_cut_bytes_must_be_durable_in_the_log_or_a_durable_cut_file() -> None:
    data = log_bytes(*STEP0) + b'{"seq":4,"ty'
    offset = parse_log(data, "session.jsonl").valid_size
    tail = data[offset:]
    log = "/s/session.jsonl"

    def lost(files: dict[str, bytes]) -> list[str]:
        return [v.code for v in tail_not_kept(files, log, tail, offset)]

    assert lost({log: data}) == []  # not cut yet
    assert lost({log: data[:offset], f"{log}.cut-{offset}": tail}) == []  # kept, then cut
    assert lost({log: data[:offset], f"{log}.cut-{offset}.2": tail}) == []
    # Cut (durably) with no durable copy, a partly durable one, or one for another offset.
    assert lost({log: data[:offset]}) == ["CUT_TAIL_LOST"]
    assert lost({log: data[:offset], f"{log}.cut-{offset}": tail[:3]}) == ["CUT_TAIL_LOST"]
    assert lost({log: data[:offset], f"{log}.cut-{offset + 1}": tail}) == ["CUT_TAIL_LOST"]
    # Appended after the cut: the bytes at the offset are others.
    after = data[:offset] + log_bytes(("tool/call", {"callId": "a"}))[len(HEADER):]
    assert lost({log: after}) == ["CUT_TAIL_LOST"]
    assert tail_not_kept({}, log, b"", offset) == []  # nothing to keep
