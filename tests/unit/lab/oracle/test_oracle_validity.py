# The pairing rules model APIs enforce (G7), checked on hand-built event lists:
# each rule with a history that keeps it and one that breaks it.
from __future__ import annotations

from typing import Any

import pytest

from faultlab.lab.oracle.validity import HistoryProblem, check_history
from faultlab.lab.read.view import LogEvent


class Log:
    """Builds events with contiguous seqs."""

    def __init__(self) -> None:
        self.events: list[LogEvent] = []

    def add(self, kind: str, **data: Any) -> int:
        seq = len(self.events)
        self.events.append(LogEvent(seq, kind, 1.0, data, seq + 2, 100 * seq))
        return seq

    def turn_start(self) -> int:
        return self.add("turn/start", turn=0)

    def turn_end(self) -> int:
        return self.add("turn/end", turn=0, reason={"kind": "completed"})

    def user(self, text: str = "hi") -> int:
        return self.add("user/message", turn=0, message=text)

    def assistant(self, text: str = "", *calls: str) -> int:
        content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
        content += [{"type": "tool-call", "id": c, "name": "t", "arguments": {}} for c in calls]
        return self.add(
            "assistant/message", turn=0, step=0, message={"role": "assistant", "content": content}
        )

    def call(self, call_id: str, parent: str | None = None) -> int:
        data: dict[str, Any] = {"turn": 0, "step": 0, "callId": call_id, "name": "t"}
        if parent is not None:
            data["parentCallId"] = parent
        return self.add("tool/call", arguments={}, **data)

    def result(self, call_id: str, parent: str | None = None) -> int:
        data: dict[str, Any] = {"turn": 0, "step": 0, "callId": call_id, "content": "ok"}
        if parent is not None:
            data["parentCallId"] = parent
        return self.add("tool/result", isError=False, sourceEventSeqs=[0], **data)

    def check(self, *, require_closed: bool = True) -> list[HistoryProblem]:
        return check_history(self.events, require_closed=require_closed)


def only(problems: list[HistoryProblem], *fragments: str) -> HistoryProblem:
    assert len(problems) == 1, problems
    for fragment in fragments:
        assert fragment in problems[0].message, problems[0].message
    return problems[0]


def tool_turn(log: Log) -> None:
    """One complete turn with two parallel calls, one nested call, chunks."""
    log.turn_start()
    log.user("deploy")
    log.add("step/start", turn=0, step=0)
    log.add("request/header", turn=0, step=0, requestId="r", envelope={})
    log.add("assistant/chunk", turn=0, step=0, index=0, delta="ok")
    log.assistant("Deploying.", "a", "b")
    log.call("a")
    log.call("b")
    log.call("a.0", parent="a")
    log.result("a.0", parent="a")
    log.result("a")
    log.result("b")
    log.add("step/end", turn=0, step=0)
    log.add("step/start", turn=0, step=1)
    log.assistant("Done.")
    log.add("step/end", turn=0, step=1)
    log.turn_end()


def test_a_well_formed_session_has_no_problems() -> None:
    log = Log()
    tool_turn(log)
    assert log.check() == []
    # a second turn with fresh call ids
    log.turn_start()
    log.user("again")
    log.assistant("", "c")
    log.result("c")
    log.assistant("Fine.")
    log.turn_end()
    assert log.check() == []
    assert check_history([]) == []


def test_a_tool_only_assistant_message_is_not_empty() -> None:
    log = Log()
    log.turn_start()
    log.user()
    log.assistant("", "x")
    log.result("x")
    log.turn_end()
    assert log.check() == []


# --- answered exactly once ---------------------------------------------------------


def test_an_unanswered_call_is_never_answered() -> None:
    log = Log()
    log.turn_start()
    log.user()
    asked = log.assistant("go", "x", "y")
    log.result("x")
    log.turn_end()
    problem = only(log.check(), "y", "never answered", f"seq {asked}")
    assert problem.seq == asked


def test_an_unanswered_call_is_reported_even_when_the_turn_may_stay_open() -> None:
    log = Log()
    log.turn_start()
    log.user()
    log.assistant("go", "x")
    only(log.check(require_closed=False), "x", "never answered")


def test_a_call_answered_twice() -> None:
    log = Log()
    log.turn_start()
    log.user()
    log.assistant("go", "x")
    log.result("x")
    second = log.result("x")
    log.turn_end()
    problem = only(log.check(), "x", "answered 2 times")
    assert problem.seq == second


def test_a_late_extra_answer_is_one_problem() -> None:
    log = Log()
    log.turn_start()
    log.user()
    log.assistant("go", "x")
    log.result("x")
    log.user("again")
    log.result("x")
    log.turn_end()
    only(log.check(), "x", "answered 2 times")


def test_a_nested_result_is_not_an_answer() -> None:
    log = Log()
    log.turn_start()
    log.user()
    log.assistant("go", "x")
    log.result("x", parent="p")
    log.turn_end()
    only(log.check(), "x", "never answered")


def test_nested_results_are_ignored_by_the_pairing_rules() -> None:
    log = Log()
    log.turn_start()
    log.user()
    log.result("ghost", parent="nobody")
    log.assistant("go", "x")
    log.result("x.0", parent="x")
    log.result("x")
    log.result("x.0", parent="x")
    log.assistant("done")
    log.result("x.1", parent="x")
    log.turn_end()
    assert log.check() == []


# --- results immediately after their assistant message -----------------------------


def test_a_user_message_between_a_call_and_its_result() -> None:
    log = Log()
    log.turn_start()
    log.user()
    asked = log.assistant("go", "x")
    between = log.user("hurry")
    late = log.result("x")
    log.turn_end()
    problem = only(log.check(), "x", "must immediately follow", f"seq {between}", f"seq {asked}")
    assert problem.seq == late


def test_an_assistant_message_between_a_call_and_its_result() -> None:
    log = Log()
    log.turn_start()
    log.user()
    log.assistant("go", "x")
    log.assistant("thinking")
    late = log.result("x")
    log.turn_end()
    assert only(log.check(), "must immediately follow").seq == late


def test_only_the_results_after_the_intervening_message_are_late() -> None:
    log = Log()
    log.turn_start()
    log.user()
    log.assistant("go", "x", "y")
    log.result("y")  # results may come in any order, as long as they come first
    log.user()
    late = log.result("x")
    log.turn_end()
    problem = only(log.check(), "x", "must immediately follow")
    assert problem.seq == late


def test_a_message_after_all_results_is_fine() -> None:
    log = Log()
    log.turn_start()
    log.user()
    log.assistant("go", "x")
    log.call("x")
    log.result("x")
    log.user("next")
    log.assistant("answer")
    log.turn_end()
    assert log.check() == []


def test_a_result_for_an_earlier_assistant_message() -> None:
    log = Log()
    log.turn_start()
    log.user()
    first = log.assistant("go", "x")
    log.assistant("more", "y")
    log.result("y")
    late = log.result("x")
    log.turn_end()
    problem = only(log.check(), "x", "must immediately follow", f"seq {first}")
    assert problem.seq == late


# --- results without a matching call ------------------------------------------------


def test_a_result_for_an_unknown_call() -> None:
    log = Log()
    log.turn_start()
    log.user()
    log.assistant("go", "x")
    log.result("x")
    orphan = log.result("nobody")
    log.turn_end()
    problem = only(log.check(), "nobody", "result without a matching call")
    assert problem.seq == orphan


def test_a_result_before_its_call_matches_nothing() -> None:
    log = Log()
    log.turn_start()
    log.user()
    early = log.result("x")
    asked = log.assistant("go", "x")
    log.turn_end()
    problems = log.check()
    assert [(p.seq, "without a matching call" in p.message) for p in problems] == [
        (early, True),
        (asked, False),
    ]
    assert "never answered" in problems[1].message


def test_a_result_without_a_call_id() -> None:
    log = Log()
    log.turn_start()
    log.user()
    log.add("tool/result", turn=0, step=0, content="?", isError=False)
    log.turn_end()
    only(log.check(), "result without a matching call")


# --- empty assistant messages -------------------------------------------------------


@pytest.mark.parametrize(
    "message",
    [
        {"role": "assistant", "content": []},
        {"role": "assistant", "content": [{"type": "text", "text": ""}]},
        {"role": "assistant", "content": [{"type": "text"}, {"type": "image"}]},
        {"role": "assistant"},
        "not an object",
    ],
)
def test_an_empty_assistant_message(message: object) -> None:
    log = Log()
    log.turn_start()
    log.user()
    seq = log.add("assistant/message", turn=0, step=0, message=message)
    log.turn_end()
    assert only(log.check(), "empty assistant message").seq == seq


def test_an_assistant_message_with_text_is_not_empty() -> None:
    log = Log()
    log.turn_start()
    log.user()
    log.add(
        "assistant/message",
        turn=0,
        step=0,
        message={"content": [{"type": "text", "text": ""}, {"type": "text", "text": "x"}]},
    )
    log.turn_end()
    assert log.check() == []


# --- unique call ids -------------------------------------------------------------


def test_a_call_id_used_twice_in_a_session() -> None:
    log = Log()
    log.turn_start()
    log.user()
    first = log.assistant("go", "x")
    log.result("x")
    again = log.assistant("again", "x")
    log.result("x")
    log.turn_end()
    problem = only(log.check(), "x", "not unique", f"seq {first}")
    assert problem.seq == again


def test_a_call_id_used_twice_in_one_message() -> None:
    log = Log()
    log.turn_start()
    log.user()
    log.assistant("go", "x", "x")
    log.result("x")
    log.turn_end()
    messages = [p.message for p in log.check()]
    assert any("not unique" in m for m in messages)


def test_a_tool_call_block_without_an_id() -> None:
    log = Log()
    log.turn_start()
    log.user()
    log.add(
        "assistant/message",
        turn=0,
        step=0,
        message={"content": [{"type": "tool-call", "name": "t", "arguments": {}}]},
    )
    log.turn_end()
    only(log.check(), "without an id")


# --- turns -------------------------------------------------------------------------


def test_a_turn_start_inside_an_open_turn() -> None:
    log = Log()
    first = log.turn_start()
    log.user()
    second = log.turn_start()
    log.user()
    log.turn_end()
    problem = only(log.check(), "turn/start", f"seq {first}", "still open")
    assert problem.seq == second


def test_a_turn_end_without_an_open_turn() -> None:
    log = Log()
    log.turn_start()
    log.turn_end()
    stray = log.turn_end()
    assert only(log.check(), "closes no open turn").seq == stray


def test_an_open_last_turn_is_a_problem_only_when_required_closed() -> None:
    log = Log()
    log.turn_start()
    log.user()
    log.assistant("hi")
    log.turn_end()
    last = log.turn_start()
    log.user()
    assert only(log.check(), "never closed", f"seq {last}").seq == last
    assert log.check(require_closed=False) == []


def test_problems_are_ordered_by_seq() -> None:
    log = Log()
    log.turn_start()
    log.user()
    log.assistant("go", "x")  # never answered, reported at the end of the walk
    log.add("assistant/message", turn=0, step=0, message={"content": []})
    log.result("nobody")
    problems = log.check()
    assert [p.seq for p in problems] == sorted(p.seq for p in problems)
    assert len(problems) == 4
