# The client-visible ACP checks on hand-built logs, updates and traces: each
# passes on what a correct agent shows and fails, with its code, on one
# missing or altered piece.
from __future__ import annotations

from typing import Any

import orjson

from faultlab.lab.oracle.acp import check_cancel, check_guidance, check_replay
from faultlab.lab.read.jsonl import parse_log
from faultlab.lab.read.view import LogView
from faultlab.scenario import ToolSpec

GUIDE = "The outcome of tool call charge (c0) is unknown. Do not retry it blindly."
CALL = {"type": "tool-call", "id": "c0", "name": "charge", "arguments": {"n": 1}}


def log(*events: tuple[str, dict[str, Any]]) -> LogView:
    lines = [orjson.dumps({"type": "session", "format": 1, "id": "s", "createdAt": 0})]
    for seq, (type_, data) in enumerate(events):
        lines.append(orjson.dumps({"seq": seq, "type": type_, "time": 0, "data": data}))
    return parse_log(b"\n".join(lines) + b"\n", "test.jsonl")


CRASHED = [
    ("turn/start", {"turn": 0}),
    ("user/message", {"turn": 0, "message": "pay"}),
    ("step/start", {"turn": 0, "step": 0}),
    ("assistant/message", {"turn": 0, "step": 0, "message": {
        "role": "assistant", "content": [{"type": "text", "text": "paying"}, CALL]}}),
    ("tool/call", {"turn": 0, "step": 0, "callId": "c0", "name": "charge", "arguments": {"n": 1}}),
]  # fmt: skip
REPAIR = [
    ("tool/result", {"turn": 0, "step": 0, "callId": "c0", "content": GUIDE, "isError": True,
                     "synthetic": True, "sourceEventSeqs": [4],
                     "error": {"code": "TOOL_OUTCOME_UNKNOWN", "message": GUIDE,
                               "retry": "verify"}}),
    ("step/end", {"turn": 0, "step": 0}),
    ("turn/end", {"turn": 0, "reason": {"kind": "interrupted"}}),
]  # fmt: skip


def replayed(*, synthetic: bool = True) -> list[dict[str, Any]]:
    updates: list[dict[str, Any]] = [
        {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "pay"}},
        {"sessionUpdate": "agent_message_chunk", "messageId": "m", "content":
         {"type": "text", "text": "pay"}},
        {"sessionUpdate": "agent_message_chunk", "messageId": "m", "content":
         {"type": "text", "text": "ing"}},
        {"sessionUpdate": "tool_call", "toolCallId": "c0", "rawInput": {"n": 1},
         "status": "pending", "title": "charge"},
        {"sessionUpdate": "tool_call_update", "toolCallId": "c0", "status": "in_progress"},
    ]  # fmt: skip
    if synthetic:
        updates.append({
            "sessionUpdate": "tool_call_update", "toolCallId": "c0", "status": "failed",
            "content": [{"type": "content", "content": {"type": "text", "text": GUIDE}}],
            "_meta": {"faultlab": {"code": "TOOL_OUTCOME_UNKNOWN", "synthetic": True}},
        })  # fmt: skip
    return updates


def test_replay_of_the_repaired_conversation_passes() -> None:
    assert check_replay(replayed(), log(*CRASHED, *REPAIR)) == []


def test_replay_without_the_synthetic_result_is_a_mismatch() -> None:
    found = check_replay(replayed(synthetic=False), log(*CRASHED, *REPAIR))
    assert [v.code for v in found] == ["ACP_REPLAY_MISMATCH"]
    assert found[0].evidence["logged"][3] == "TOOL_OUTCOME_UNKNOWN"


def test_replay_with_another_code_is_a_mismatch() -> None:
    updates = replayed()
    updates[-1]["_meta"]["faultlab"]["code"] = "TOOL_NOT_STARTED"
    assert [v.code for v in check_replay(updates, log(*CRASHED, *REPAIR))] == [
        "ACP_REPLAY_MISMATCH"
    ]


def model_input(content: str | None) -> dict[str, Any]:
    errors = [] if content is None else [
        {"callId": "c0", "code": "TOOL_OUTCOME_UNKNOWN", "content": content}]  # fmt: skip
    return {"fact": "model/input", "requestId": "req-t1-s0", "toolErrors": errors}


def test_guidance_delivered_verbatim_passes() -> None:
    assert check_guidance(log(*CRASHED), log(*CRASHED, *REPAIR), [model_input(GUIDE)]) == []


def test_guidance_missing_or_altered_fails() -> None:
    for sent in (None, "Tool error."):
        found = check_guidance(log(*CRASHED), log(*CRASHED, *REPAIR), [model_input(sent)])
        assert [v.code for v in found] == ["GUIDANCE_NOT_DELIVERED"], sent


def test_guidance_is_not_checked_without_a_later_request() -> None:
    assert check_guidance(log(*CRASHED), log(*CRASHED, *REPAIR), []) == []


TOOLS = {"charge": ToolSpec(name="charge")}
ABORTED = {"turn": 0, "step": 0, "callId": "c0", "content": "not started", "isError": True,
           "error": {"code": "ABORTED_BEFORE_DISPATCH", "message": "not started"},
           "sourceEventSeqs": [3]}  # fmt: skip
CANCELLED = [
    *CRASHED[:4],
    ("tool/result", ABORTED),
    ("step/end", {"turn": 0, "step": 0}),
    ("turn/end", {"turn": 0, "reason": {"kind": "cancelled"}}),
]
SHOWN = [
    {"sessionUpdate": "tool_call", "toolCallId": "c0", "status": "pending"},
    {"sessionUpdate": "tool_call_update", "toolCallId": "c0", "status": "failed",
     "_meta": {"faultlab": {"code": "ABORTED_BEFORE_DISPATCH", "cancelled": True}}},
]  # fmt: skip


def test_cancel_persisted_and_shown_passes() -> None:
    trace = [{"fact": "session/cancel"}]
    assert check_cancel(shown=SHOWN, stop_reason="cancelled", log=log(*CANCELLED),
                        tools=TOOLS, trace=trace) == []  # fmt: skip


def test_cancel_without_closing_events_or_answers_fails() -> None:
    codes = [
        v.code
        for v in check_cancel(
            shown=SHOWN[:1], stop_reason="cancelled", log=log(*CRASHED), tools=TOOLS, trace=[]
        )
    ]
    # the open turn, the stop reason that does not match it, the call left pending
    assert codes == ["CANCEL_NOT_PERSISTED"] * 3


def test_cancel_with_a_body_started_afterwards_fails() -> None:
    trace = [{"fact": "session/cancel"}, {"boundary": "tool/durable", "n": 1, "callId": "c0"}]
    found = check_cancel(shown=SHOWN, stop_reason="cancelled", log=log(*CANCELLED),
                         tools=TOOLS, trace=trace)  # fmt: skip
    assert [v.code for v in found] == ["DISPATCH_AFTER_CANCEL"]
