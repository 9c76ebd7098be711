# The repair the lab expects for a crashed log, from hand-built events: which
# calls get TOOL_NOT_STARTED or TOOL_OUTCOME_UNKNOWN, citing what, in which
# order, with which retry guidance; and which step and turn get closed.
from __future__ import annotations

from typing import Any

from faultlab.lab.oracle.expected import (
    TOOL_NOT_STARTED,
    TOOL_OUTCOME_UNKNOWN,
    ExpectedRepair,
    ExpectedResult,
    expected_repair,
)
from faultlab.lab.read.view import LogEvent
from faultlab.scenario import ToolSpec

TOOLS = {
    "deploy": ToolSpec(name="deploy"),
    "read": ToolSpec(name="read", read_only=True),
    "put": ToolSpec(name="put", idempotent=True),
}


class Log:
    """Builds events with contiguous seqs."""

    def __init__(self) -> None:
        self.events: list[LogEvent] = []
        self.turn = -1

    def add(self, kind: str, **data: Any) -> int:
        seq = len(self.events)
        self.events.append(LogEvent(seq, kind, 1.0, data, seq + 2, 100 * seq))
        return seq

    def turn_start(self) -> int:
        self.turn += 1
        seq = self.add("turn/start", turn=self.turn)
        self.add("user/message", turn=self.turn, message="go")
        return seq

    def turn_end(self) -> int:
        return self.add("turn/end", turn=self.turn, reason={"kind": "completed"})

    def step_start(self, step: int) -> int:
        return self.add("step/start", turn=self.turn, step=step)

    def step_end(self, step: int) -> int:
        return self.add("step/end", turn=self.turn, step=step)

    def assistant(self, *calls: tuple[str, str], text: str = "ok") -> int:
        content: list[dict[str, Any]] = [{"type": "text", "text": text}]
        content += [
            {"type": "tool-call", "id": call_id, "name": name, "arguments": {}}
            for call_id, name in calls
        ]
        return self.add("assistant/message", turn=self.turn, step=0, message={"content": content})

    def call(self, call_id: str, name: str, parent: str | None = None) -> int:
        data: dict[str, Any] = {"callId": call_id, "name": name, "arguments": {}}
        if parent is not None:
            data["parentCallId"] = parent
        return self.add("tool/call", turn=self.turn, step=0, **data)

    def result(self, call_id: str, parent: str | None = None) -> int:
        data: dict[str, Any] = {"callId": call_id, "content": "done", "isError": False}
        if parent is not None:
            data["parentCallId"] = parent
        return self.add("tool/result", turn=self.turn, step=0, sourceEventSeqs=[0], **data)

    def expect(self) -> ExpectedRepair:
        return expected_repair(self.events, TOOLS)


def unknown(call_id: str, name: str, cites: int, parent: str | None = None) -> ExpectedResult:
    retry = "safe" if name in ("read", "put") else "verify"
    return ExpectedResult(call_id, name, TOOL_OUTCOME_UNKNOWN, cites, parent, retry)


def not_started(call_id: str, name: str, cites: int) -> ExpectedResult:
    return ExpectedResult(call_id, name, TOOL_NOT_STARTED, cites, None, "safe")


# --- nothing to repair -----------------------------------------------------------


def test_no_events_need_no_repair() -> None:
    repair = expected_repair([], TOOLS)
    assert repair == ExpectedRepair((), None, None)
    assert repair.nothing


def test_a_log_without_turns_needs_no_repair() -> None:
    log = Log()
    log.add("user/message", turn=0, message="x")
    assert log.expect().nothing


def test_a_closed_last_turn_needs_no_repair_even_with_unanswered_calls() -> None:
    log = Log()
    log.turn_start()
    log.step_start(0)
    log.assistant(("a", "deploy"))
    log.call("a", "deploy")
    log.turn_end()
    assert log.expect().nothing


def test_only_the_last_turn_is_repaired() -> None:
    log = Log()
    log.turn_start()
    log.step_start(0)
    log.assistant(("old", "deploy"))  # an earlier turn left open: not repaired
    log.turn_start()
    log.step_start(0)
    log.assistant(text="fine")
    log.step_end(0)
    log.turn_end()
    assert log.expect().nothing

    log.turn_start()
    asked = log.assistant(("new", "deploy"))
    repair = log.expect()
    assert repair.results == (not_started("new", "deploy", asked),)
    assert repair.close_turn == 2


# --- closing the step and the turn --------------------------------------------------


def test_an_open_turn_without_steps_only_closes_the_turn() -> None:
    log = Log()
    log.turn_start()
    log.step_start(0)
    log.step_end(0)
    log.turn_end()
    log.turn_start()
    repair = log.expect()
    assert repair == ExpectedRepair((), None, 1)
    assert not repair.nothing


def test_an_open_step_is_closed() -> None:
    log = Log()
    log.turn_start()
    log.step_start(0)
    log.add("request/header", turn=0, step=0, requestId="r", envelope={})
    assert log.expect() == ExpectedRepair((), 0, 0)


def test_a_closed_step_is_not_closed_again() -> None:
    log = Log()
    log.turn_start()
    log.step_start(0)
    log.step_end(0)
    log.step_start(1)
    assert log.expect().close_step == 1
    log.step_end(1)
    assert log.expect() == ExpectedRepair((), None, 0)


def test_a_turn_or_step_number_that_is_not_an_integer_is_minus_one() -> None:
    log = Log()
    log.add("turn/start", turn="zero")
    log.add("step/start", turn=0, step=True)
    assert log.expect() == ExpectedRepair((), -1, -1)


# --- classification and citations ---------------------------------------------------


def test_a_call_without_a_durable_tool_call_was_not_started() -> None:
    log = Log()
    log.turn_start()
    log.step_start(0)
    asked = log.assistant(("a", "deploy"), ("b", "read"))
    repair = log.expect()
    assert repair.results == (not_started("a", "deploy", asked), not_started("b", "read", asked))
    assert repair.close_step == 0


def test_a_call_with_a_durable_tool_call_has_an_unknown_outcome() -> None:
    log = Log()
    log.turn_start()
    log.step_start(0)
    log.assistant(("a", "deploy"))
    logged = log.call("a", "deploy")
    assert log.expect().results == (unknown("a", "deploy", logged),)


def test_answered_calls_are_skipped() -> None:
    log = Log()
    log.turn_start()
    log.step_start(0)
    log.assistant(("a", "deploy"), ("b", "deploy"))
    log.call("a", "deploy")
    log.result("a")
    logged = log.call("b", "deploy")
    assert log.expect().results == (unknown("b", "deploy", logged),)
    log.result("b")
    assert log.expect() == ExpectedRepair((), 0, 0)


def test_a_nested_result_does_not_answer_a_top_level_call() -> None:
    log = Log()
    log.turn_start()
    log.step_start(0)
    log.assistant(("a", "deploy"))
    logged = log.call("a", "deploy")
    log.result("a", parent="other")
    assert log.expect().results == (unknown("a", "deploy", logged),)


def test_a_nested_tool_call_does_not_make_a_top_level_call_started() -> None:
    log = Log()
    log.turn_start()
    log.step_start(0)
    asked = log.assistant(("a", "deploy"))
    log.call("a", "deploy", parent="other")
    assert log.expect().results == (not_started("a", "deploy", asked),)


def test_results_follow_model_order_not_dispatch_order() -> None:
    log = Log()
    log.turn_start()
    log.step_start(0)
    first = log.assistant(("a", "read"), ("b", "read"), ("c", "read"))
    b = log.call("b", "read")
    a = log.call("a", "read")
    log.step_end(0)
    log.step_start(1)
    second = log.assistant(("d", "deploy"))
    assert log.expect().results == (
        unknown("a", "read", a),
        unknown("b", "read", b),
        not_started("c", "read", first),
        not_started("d", "deploy", second),
    )
    assert log.expect().close_step == 1


def test_a_call_requested_twice_is_repaired_once() -> None:
    log = Log()
    log.turn_start()
    asked = log.assistant(("a", "deploy"))
    log.assistant(("a", "deploy"))
    assert log.expect().results == (not_started("a", "deploy", asked),)


def test_a_tool_call_block_without_an_id_is_skipped() -> None:
    log = Log()
    log.turn_start()
    log.add(
        "assistant/message",
        turn=0,
        step=0,
        message={"content": [{"type": "tool-call", "name": "deploy", "arguments": {}}]},
    )
    assert log.expect().results == ()


# --- retry guidance ---------------------------------------------------------------


def test_retry_guidance_follows_the_tool_annotations() -> None:
    log = Log()
    log.turn_start()
    log.step_start(0)
    asked = log.assistant(
        ("w", "deploy"), ("r", "read"), ("i", "put"), ("u", "mystery"), ("n", "deploy")
    )
    seqs = {name: log.call(name, tool) for name, tool in [("w", "deploy"), ("r", "read")]}
    seqs |= {name: log.call(name, tool) for name, tool in [("i", "put"), ("u", "mystery")]}
    retry = {r.call_id: (r.code, r.retry, r.cites) for r in log.expect().results}
    assert retry == {
        "w": (TOOL_OUTCOME_UNKNOWN, "verify", seqs["w"]),  # side effect, not idempotent
        "r": (TOOL_OUTCOME_UNKNOWN, "safe", seqs["r"]),  # read-only
        "i": (TOOL_OUTCOME_UNKNOWN, "safe", seqs["i"]),  # idempotent
        "u": (TOOL_OUTCOME_UNKNOWN, "verify", seqs["u"]),  # unknown tool
        "n": (TOOL_NOT_STARTED, "safe", asked),  # never started: always safe
    }


# --- nested calls ------------------------------------------------------------------


def test_unanswered_nested_calls_come_first_depth_first_in_log_order() -> None:
    log = Log()
    log.turn_start()
    log.step_start(0)
    log.assistant(("p", "deploy"), ("q", "read"))
    p = log.call("p", "deploy")
    a = log.call("p.0", "read", parent="p")
    a0 = log.call("p.0.0", "deploy", parent="p.0")
    b = log.call("p.1", "put", parent="p")
    log.result("p.1", parent="p")
    c = log.call("p.2", "deploy", parent="p")
    q = log.call("q", "read")
    assert b < c
    assert log.expect().results == (
        unknown("p.0.0", "deploy", a0, parent="p.0"),
        unknown("p.0", "read", a, parent="p"),
        unknown("p.2", "deploy", c, parent="p"),
        unknown("p", "deploy", p),
        unknown("q", "read", q),
    )


def test_an_answered_nested_call_still_has_its_unanswered_children_repaired() -> None:
    log = Log()
    log.turn_start()
    log.assistant(("p", "read"))
    p = log.call("p", "read")
    log.call("p.0", "read", parent="p")
    deep = log.call("p.0.0", "deploy", parent="p.0")
    log.result("p.0", parent="p")
    assert log.expect().results == (
        unknown("p.0.0", "deploy", deep, parent="p.0"),
        unknown("p", "read", p),
    )


def test_nested_calls_of_an_answered_parent_are_not_repaired() -> None:
    log = Log()
    log.turn_start()
    log.assistant(("p", "deploy"), ("q", "deploy"))
    log.call("p", "deploy")
    log.call("p.0", "deploy", parent="p")
    log.result("p")
    q = log.call("q", "deploy")
    assert log.expect().results == (unknown("q", "deploy", q),)


def test_a_cycle_of_parent_ids_terminates() -> None:
    log = Log()
    log.turn_start()
    log.assistant(("p", "deploy"))
    p = log.call("p", "deploy")
    x = log.call("x", "deploy", parent="p")
    y = log.call("y", "deploy", parent="x")
    log.call("x", "deploy", parent="y")  # a repeated id: its first tool/call counts
    log.call("p", "deploy", parent="y")
    assert log.expect().results == (
        unknown("y", "deploy", y, parent="x"),
        unknown("x", "deploy", x, parent="p"),
        unknown("p", "deploy", p),
    )
