# The scripted model's branch choice, the resume cursor, and the world ledger.
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import scenario_from

from faultlab.runtime.events import Event
from faultlab.runtime.history import build_messages, latest_tool_results
from faultlab.runtime.ledger import WorldLedger
from faultlab.runtime.model import choose_content
from faultlab.runtime.resume import next_cursor

CAREFUL = """
resume_prompt = "Go on."
[tools.deploy]
effect = "ledger"
[tools.status]
read_only = true
[[turns]]
user = "deploy"
  [[turns.steps]]
  tool_calls = [{ tool = "deploy" }]
  [[turns.steps]]
  text = "done"
    [[turns.steps.branches]]
    when = "TOOL_OUTCOME_UNKNOWN"
    tool = "deploy"
    text = "checking"
    tool_calls = [{ tool = "status" }]
  [[turns.steps]]
  text = "checked"
[[turns]]
user = "bye"
  [[turns.steps]]
  text = "bye"
"""


def events(*specs: tuple[str, dict[str, Any]]) -> list[Event]:
    return [Event(i, type_, 0.0, data) for i, (type_, data) in enumerate(specs)]


def call_message(*names: str) -> dict[str, Any]:
    blocks = [
        {"type": "tool-call", "id": f"c{i}", "name": n, "arguments": {}}
        for i, n in enumerate(names)
    ]
    return {"role": "assistant", "content": blocks}


def result(call_id: str, code: str | None = None) -> tuple[str, dict[str, Any]]:
    data: dict[str, Any] = {"callId": call_id, "content": "x", "isError": code is not None}
    if code:
        data["error"] = {"code": code, "message": "x"}
    return ("tool/result", data)


def test_branch_is_taken_only_for_its_code_and_tool() -> None:
    scenario = scenario_from(CAREFUL)
    step = scenario.turns[0].steps[1]
    unknown = build_messages(
        events(
            ("user/message", {"message": "deploy"}),
            ("assistant/message", {"message": call_message("deploy")}),
            result("c0", "TOOL_OUTCOME_UNKNOWN"),
            ("user/message", {"message": "Go on."}),
        )
    )
    assert choose_content(step, unknown) is step.branches[0]
    fine = build_messages(
        events(("assistant/message", {"message": call_message("deploy")}), result("c0"))
    )
    assert choose_content(step, fine) is step
    other_tool = build_messages(
        events(
            ("assistant/message", {"message": call_message("status")}),
            result("c0", "TOOL_OUTCOME_UNKNOWN"),
        )
    )
    assert choose_content(step, other_tool) is step


def test_only_the_latest_batch_of_results_counts() -> None:
    messages = build_messages(
        events(
            ("assistant/message", {"message": call_message("deploy")}),
            result("c0", "TOOL_OUTCOME_UNKNOWN"),
            (
                "assistant/message",
                {
                    "message": {
                        "role": "assistant",
                        "content": [
                            {"type": "tool-call", "id": "c9", "name": "status", "arguments": {}}
                        ],
                    }
                },
            ),
            result("c9"),
        )
    )
    latest = latest_tool_results(messages)
    assert [(r["callId"], r["name"]) for r in latest] == [("c9", "status")]


def test_nested_results_never_reach_the_model() -> None:
    messages = build_messages(
        events(
            ("assistant/message", {"message": call_message("deploy")}),
            (
                "tool/result",
                {"callId": "c0.0", "parentCallId": "c0", "content": "n", "isError": False},
            ),
            result("c0"),
        )
    )
    assert [b["callId"] for b in messages[1]["content"]] == ["c0"]


def turn_start(turn: int, script_turn: int, script_step: int = 0) -> tuple[str, dict[str, Any]]:
    return ("turn/start", {"turn": turn, "scriptTurn": script_turn, "scriptStep": script_step})


@pytest.mark.parametrize(
    ("log", "expected"),
    [
        ([], (0, 0, "deploy", False)),
        ([turn_start(0, 0)], (0, 0, "Go on.", True)),
        (
            [turn_start(0, 0), ("assistant/message", {"message": call_message("deploy")})],
            (0, 1, "Go on.", True),
        ),
        (
            [
                turn_start(0, 0),
                ("assistant/message", {"message": call_message("deploy")}),
                ("turn/end", {"reason": {"kind": "interrupted"}}),
                turn_start(1, 0, 1),
                ("assistant/message", {"message": call_message("status")}),
            ],
            (0, 2, "Go on.", True),
        ),
        (
            [
                turn_start(0, 0),
                ("assistant/message", {"message": {"role": "assistant", "content": []}}),
            ],
            (1, 0, "bye", False),
        ),
        ([turn_start(0, 0), ("turn/end", {"reason": {"kind": "completed"}})], (1, 0, "bye", False)),
        ([turn_start(3, 1), ("turn/end", {"reason": {"kind": "completed"}})], None),
    ],
)
def test_resume_cursor(log: list[tuple[str, dict[str, Any]]], expected: Any) -> None:
    cursor = next_cursor(events(*log), scenario_from(CAREFUL))
    if expected is None:
        assert cursor is None
    else:
        assert cursor is not None
        got = (cursor.script_turn, cursor.script_step, cursor.user_text, cursor.continuation)
        assert got == expected


def test_ledger_applies_each_idempotency_key_once_and_survives_reopen(tmp_path: Path) -> None:
    ledger = WorldLedger(tmp_path / "world.jsonl")
    assert ledger.apply(call_id="a", tool="pay", arguments={}, key=None)
    assert ledger.apply(call_id="b", tool="pay", arguments={}, key=None)
    assert ledger.apply(call_id="c", tool="invoice", arguments={}, key="c")
    assert not ledger.apply(call_id="c", tool="invoice", arguments={}, key="c")
    ledger.close()
    reopened = WorldLedger(tmp_path / "world.jsonl")
    assert not reopened.apply(call_id="c", tool="invoice", arguments={}, key="c")
    assert (reopened.count("pay"), reopened.count("invoice")) == (2, 1)
    reopened.close()


def test_a_torn_ledger_record_does_not_swallow_the_next(tmp_path: Path) -> None:
    path = tmp_path / "world.jsonl"
    path.write_bytes(b'{"callId":"a","tool":"pay","arguments":{},"key":null}\n{"callId":"b","to')
    ledger = WorldLedger(path)
    assert ledger.count("pay") == 1
    ledger.apply(call_id="c", tool="pay", arguments={}, key=None)
    ledger.close()
    assert WorldLedger(path).count("pay") == 2
