# Crash repair: the two classes with their guidance and cited seqs, nested
# calls, closing events, and idempotence.
from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import orjson
from conftest import scenario_from

from faultlab.runtime.app import SessionRunner
from faultlab.runtime.events import Event
from faultlab.runtime.repair import plan_repair

SAFE = {"read": True, "pay": False}


def safety(name: str) -> bool | None:
    return SAFE.get(name)


class LogBuilder:
    def __init__(self) -> None:
        self.events: list[Event] = []

    def add(self, type_: str, **data: Any) -> int:
        self.events.append(Event(len(self.events), type_, 0.0, data))
        return len(self.events) - 1

    def open_step_with_calls(self, *names: str) -> int:
        self.add("turn/start", turn=0)
        self.add("user/message", turn=0, message="hi")
        self.add("step/start", turn=0, step=0)
        blocks = [
            {"type": "tool-call", "id": f"c{i}", "name": name, "arguments": {}}
            for i, name in enumerate(names)
        ]
        message = {"role": "assistant", "content": [{"type": "text", "text": "x"}, *blocks]}
        return self.add("assistant/message", turn=0, step=0, message=message)


def apply(events: list[Event], actions: list[Any]) -> list[Event]:
    out = list(events)
    for action in actions:
        out.append(Event(len(out), action.type, 0.0, action.data))
    return out


def test_call_without_durable_tool_call_is_not_started_citing_the_assistant_message() -> None:
    log = LogBuilder()
    message_seq = log.open_step_with_calls("pay")
    actions = plan_repair(log.events, safety)
    assert [a.type for a in actions] == ["tool/result", "step/end", "turn/end"]
    result = actions[0].data
    assert result["error"]["code"] == "TOOL_NOT_STARTED"
    assert result["sourceEventSeqs"] == [message_seq]
    assert "never started" in result["content"] and "Call it again" in result["content"]
    assert result["isError"] is True and result["error"]["retry"] == "safe"
    assert actions[2].data["reason"] == {"kind": "interrupted"}


def test_durable_call_without_result_is_outcome_unknown_citing_the_call_seq() -> None:
    log = LogBuilder()
    log.open_step_with_calls("pay", "read")
    pay_seq = log.add("tool/call", turn=0, step=0, callId="c0", name="pay", arguments={})
    read_seq = log.add("tool/call", turn=0, step=0, callId="c1", name="read", arguments={})
    actions = plan_repair(log.events, safety)
    pay, read = actions[0].data, actions[1].data
    assert (pay["callId"], pay["error"]["code"], pay["sourceEventSeqs"]) == (
        "c0",
        "TOOL_OUTCOME_UNKNOWN",
        [pay_seq],
    )
    assert "Do not retry it blindly" in pay["content"] and pay["error"]["retry"] == "verify"
    assert "verify the external state" in pay["content"]
    assert read["sourceEventSeqs"] == [read_seq] and read["error"]["retry"] == "safe"
    assert "safe to call it again" in read["content"]


def test_answered_calls_are_left_alone_and_classes_follow_model_order() -> None:
    log = LogBuilder()
    log.open_step_with_calls("read", "pay", "pay")
    log.add("tool/call", turn=0, step=0, callId="c0", name="read", arguments={})
    log.add("tool/result", turn=0, step=0, callId="c0", content="ok", isError=False)
    log.add("tool/call", turn=0, step=0, callId="c1", name="pay", arguments={})
    actions = plan_repair(log.events, safety)
    codes = [(a.data["callId"], a.data["error"]["code"]) for a in actions if "error" in a.data]
    assert codes == [("c1", "TOOL_OUTCOME_UNKNOWN"), ("c2", "TOOL_NOT_STARTED")]


def test_dangling_nested_call_is_answered_before_its_parent() -> None:
    log = LogBuilder()
    log.open_step_with_calls("pay")
    log.add("tool/call", turn=0, step=0, callId="c0", name="pay", arguments={})
    nested = log.add(
        "tool/call", turn=0, step=0, callId="c0.0", name="read", arguments={}, parentCallId="c0"
    )
    actions = plan_repair(log.events, safety)
    first, second = actions[0].data, actions[1].data
    assert (first["callId"], first["parentCallId"], first["sourceEventSeqs"]) == (
        "c0.0",
        "c0",
        [nested],
    )
    assert second["callId"] == "c0" and "parentCallId" not in second


def test_open_turn_without_step_gets_only_turn_end() -> None:
    log = LogBuilder()
    log.add("turn/start", turn=3)
    actions = plan_repair(log.events, safety)
    assert [(a.type, a.data) for a in actions] == [
        ("turn/end", {"turn": 3, "reason": {"kind": "interrupted"}})
    ]


def test_closed_or_empty_logs_need_no_repair() -> None:
    assert plan_repair([], safety) == []
    log = LogBuilder()
    log.add("turn/start", turn=0)
    log.add("turn/end", turn=0, reason={"kind": "completed"})
    assert plan_repair(log.events, safety) == []


def test_repair_is_idempotent_and_converges_when_cut_short() -> None:
    log = LogBuilder()
    log.open_step_with_calls("pay", "read", "pay")
    log.add("tool/call", turn=0, step=0, callId="c0", name="pay", arguments={})
    full = apply(log.events, plan_repair(log.events, safety))
    assert plan_repair(full, safety) == []
    for cut in range(len(log.events), len(full)):
        partial = full[:cut]
        converged = apply(partial, plan_repair(partial, safety))
        assert [(e.seq, e.type, e.data) for e in converged] == [
            (e.seq, e.type, e.data) for e in full
        ]


DEPLOY = """
[tools.deploy]
effect = "ledger"
[[turns]]
user = "deploy"
  [[turns.steps]]
  tool_calls = [{ tool = "deploy" }]
  [[turns.steps]]
  text = "done"
"""


def test_resume_commits_the_repair_once(tmp_path: Path) -> None:
    scenario = scenario_from(DEPLOY)
    directory = tmp_path / "s"
    log = LogBuilder()
    log.open_step_with_calls("deploy")
    log.add("tool/call", turn=0, step=0, callId="c0", name="deploy", arguments={})
    directory.mkdir()
    header = b'{"type":"session","format":1,"id":"x","createdAt":0}\n'
    body = b"".join(orjson.dumps(e.to_json()) + b"\n" for e in log.events)
    (directory / "session.jsonl").write_bytes(header + body)
    outcome = asyncio.run(SessionRunner(scenario, directory, resume=True).run())
    assert outcome.repaired == 3 and outcome.reason == "completed"
    again = asyncio.run(SessionRunner(scenario, directory, resume=True).run())
    assert again.repaired == 0 and again.turns == 0
