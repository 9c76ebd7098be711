# The position rule: where the scripted model is, from a history alone.
from __future__ import annotations

import pytest

from faultlab.lab.read.histories import Call, History, Message
from faultlab.lab.servers.script import FINAL_TEXT, choose_answer, result_code
from faultlab.scenario import Scenario, load_scenario
from tests.conftest import SCENARIOS


def scenario(name: str) -> Scenario:
    return load_scenario(SCENARIOS / f"{name}.toml")


def h(*messages: Message) -> History:
    return History(messages)


DEPLOY = Message("assistant", "Deploying api v2.",
                 (Call("x", "deploy", {"service": "api", "version": 2}),))  # fmt: skip


def test_first_request_answers_the_first_step() -> None:
    answer = choose_answer(scenario("deploy-careful"), h(Message("user", "Deploy api v2.")))
    assert (answer.step, answer.branch, answer.text) == (0, None, "Deploying api v2.")
    assert [c.tool for c in answer.calls] == ["deploy"]


@pytest.mark.parametrize(("result", "branch", "tool"), [
    ("deployed api v2", None, None),
    ("TOOL_OUTCOME_UNKNOWN: the outcome is unknown, verify first", "TOOL_OUTCOME_UNKNOWN",
     "deploy_status"),
    ("The call was not started.", "TOOL_NOT_STARTED", "deploy"),
])  # fmt: skip
def test_branch_follows_the_latest_result(result: str, branch: str | None,
                                          tool: str | None) -> None:  # fmt: skip
    history = h(
        Message("user", "Deploy api v2."),
        DEPLOY,
        Message("tool", result, call_id="x"),
        Message("user", "Continue."),
    )
    answer = choose_answer(scenario("deploy-careful"), history)
    assert (answer.step, answer.branch) == (1, branch)
    assert [c.tool for c in answer.calls] == ([tool] if tool else [])
    assert choose_answer(scenario("deploy-careful"), history) == answer  # deterministic


def test_a_matched_branch_moves_the_script_on() -> None:
    status = Message("assistant", "checking", (Call("y", "deploy_status", {"service": "api"}),))
    history = h(
        Message("user", "Deploy api v2."),
        DEPLOY,
        Message("tool", "outcome unknown", call_id="x"),
        status,
        Message("tool", "running v2", call_id="y"),
    )
    assert choose_answer(scenario("deploy-careful"), history).text == "Checked: api v2 is deployed."


def test_resume_before_any_assistant_message_restarts_the_turn() -> None:
    history = h(Message("user", "<reminder/>\nDeploy api v2."), Message("user", "Continue."))
    assert choose_answer(scenario("deploy-careful"), history).step == 0


def test_turns_follow_the_users_texts() -> None:
    spec = scenario("multi-turn")
    noted = [Message("user", spec.turns[0].user), Message("assistant", "Noted.")]
    # The turn is over; a resume prompt is not the next turn's text.
    assert choose_answer(spec, h(*noted, Message("user", "Continue."))).text == FINAL_TEXT
    second = choose_answer(spec, h(*noted, Message("user", spec.turns[1].user)))
    assert (second.step, second.turn) == (1, 1)
    # A call id fresh per answer (its request's n), with the step in it.
    assert second.call_id(0, "toolu_", answer=4) == "toolu_fl4s1c0"
    assert second.call_id(0, "toolu_", answer=5) != second.call_id(0, "toolu_", answer=4)


def test_unmatched_assistant_messages_are_ignored() -> None:
    history = h(Message("user", "Deploy api v2."), Message("assistant", "let me think"))
    assert choose_answer(scenario("deploy-careful"), history).step == 0


@pytest.mark.parametrize(("text", "is_error", "code"), [
    ("ok", False, None),
    ("boom", True, "TOOL_FAILED"),
    ("the outcome is unknown", True, "TOOL_OUTCOME_UNKNOWN"),
    ("Tool was not run", True, "TOOL_NOT_STARTED"),
    ("Interrupted by the user", True, "ABORTED_BEFORE_DISPATCH"),
    ("error CHECKPOINT_FAILED", True, "CHECKPOINT_FAILED"),
])  # fmt: skip
def test_result_codes(text: str, is_error: bool, code: str | None) -> None:
    assert result_code(Message("tool", text, call_id="x", is_error=is_error)) == code
