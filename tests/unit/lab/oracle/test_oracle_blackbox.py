# `faultlab.lab.oracle.blackbox` on hand-made gate records: a correct
# recovery passes, and each black-box guarantee fails with its code when the
# resumed agent's first request (the ground truth the model server saw)
# breaks it, or the ledger holds an effect twice.
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from faultlab.lab.oracle.blackbox import BlackboxObservation, check_blackbox
from faultlab.lab.read.histories import Call, History, Message
from faultlab.scenario import load_scenario

SCENARIO = load_scenario(Path(__file__).resolve().parents[4] / "scenarios" / "payment.toml")
PROMPT = "Refund order 7"
CHARGE = Call("toolu_1", "charge_card", {"amount": 40})
UNKNOWN = "TOOL_OUTCOME_UNKNOWN: the outcome is unknown; verify before retrying"
LEDGER = ({"callId": "mcp-1", "tool": "charge_card", "arguments": {"amount": 40}, "key": None},)


def request(*messages: Message) -> dict[str, Any]:
    return {"boundary": "model/request", "history": History(messages).to_json()}


def user(text: str) -> Message:
    return Message("user", text)


def calling(*calls: Call) -> Message:
    return Message("assistant", "", calls)


def result(call_id: str, text: str, error: bool = False) -> Message:
    return Message("tool", text, call_id=call_id, is_error=error)


# Killed inside charge_card: the server received and applied it, never replied.
CRASH = (
    request(user(PROMPT)),
    {"boundary": "tool/received", "tool": "charge_card", "arguments": {"amount": 40},
     "callId": "mcp-1"},
    {"boundary": "tool/applied", "tool": "charge_card", "arguments": {"amount": 40},
     "callId": "mcp-1", "applied": True},
)  # fmt: skip


def observe(*resumed: dict[str, Any], ledger: tuple[dict[str, Any], ...] = LEDGER,
            status: int = 0, completed: tuple[str, ...] = ()) -> BlackboxObservation:  # fmt: skip
    return BlackboxObservation(
        scenario=SCENARIO, crash=CRASH, resume=resumed, ledger=ledger, reference_ledger=LEDGER,
        resume_status=status, completed=completed,
    )  # fmt: skip


def codes(obs: BlackboxObservation) -> list[str]:
    return [v.code for v in check_blackbox(obs)]


GOOD = request(user(PROMPT), calling(CHARGE), result("toolu_1", UNKNOWN, True), user("Continue."))


def test_a_truthful_recovery_passes() -> None:
    assert check_blackbox(observe(GOOD)) == []


def test_a_forgotten_call_is_intent_lost() -> None:
    forgot = request(user(PROMPT), user("Continue."))
    assert codes(observe(forgot)) == ["TOOL_INTENT_LOST"]


def test_an_applied_call_presented_as_aborted_or_not_started_is_misclassified() -> None:
    for text in ("The call was aborted.", "Tool was not run", "Error: failed"):
        said = request(user(PROMPT), calling(CHARGE), result("toolu_1", text, True))
        assert codes(observe(said)) == ["REPAIR_MISCLASSIFIED"], text


def test_a_call_that_never_reached_the_server_shown_as_success_is_misclassified() -> None:
    other = Call("toolu_2", "charge_card", {"amount": 99})
    said = request(user(PROMPT), calling(CHARGE, other), result("toolu_1", UNKNOWN, True),
                   result("toolu_2", "charged 99"))  # fmt: skip
    assert codes(observe(said)) == ["REPAIR_MISCLASSIFIED"]


def test_a_dangling_call_is_an_invalid_history() -> None:
    dangling = request(user(PROMPT), calling(CHARGE), user("Continue."))
    assert codes(observe(dangling)) == ["PROVIDER_INVALID_HISTORY"]


def test_a_lost_prompt_is_a_lost_request_or_a_new_session() -> None:
    # The prompt the model saw is gone: the agent started afresh.
    assert codes(observe(request(user("Continue.")))) == ["SESSION_NOT_FOUND"]
    # One of two prompts the model saw is gone.
    crash = (request(user(PROMPT)), request(user(PROMPT), Message("assistant", "ok"),
                                           user("And order 8")))  # fmt: skip
    obs = BlackboxObservation(SCENARIO, crash, (request(user(PROMPT), user("Continue.")),),
                              (), (), 0)  # fmt: skip
    assert codes(obs) == ["REQUEST_ENVELOPE_LOST"]


def test_a_resume_that_cannot_find_the_session_is_its_own_code() -> None:
    assert codes(observe(status=1)) == ["SESSION_NOT_FOUND"]
    assert codes(observe(status=0)) == ["RESUME_FAILED"]


def test_a_completed_turn_must_survive() -> None:
    assert codes(observe(GOOD, completed=("Refunded.",))) == ["COMPLETED_TURN_LOST"]
    kept = request(user(PROMPT), Message("assistant", "Refunded."), calling(CHARGE),
                   result("toolu_1", UNKNOWN, True))  # fmt: skip
    assert codes(observe(kept, completed=("Refunded.",))) == []


@pytest.mark.parametrize("key", [None, "k-1"])
def test_a_second_charge_is_a_duplicated_effect(key: str | None) -> None:
    again = {"amount": 40, "idempotency_key": key}
    twice = (*LEDGER, {"callId": "mcp-2", "tool": "charge_card", "arguments": again, "key": key})
    assert codes(observe(GOOD, ledger=twice)) == ["SIDE_EFFECT_DUPLICATED"]


def test_the_real_result_may_be_shown_even_wrapped_but_not_an_invented_one() -> None:
    replied = {"boundary": "tool/replied", "tool": "charge_card", "callId": "mcp-1",
               "isError": False, "text": "charged 40.00 EUR"}  # fmt: skip
    wrapped = request(user(PROMPT), calling(CHARGE),
                      result("toolu_1", "Wall time: 0.01 seconds\nOutput:\ncharged 40.00 EUR"))
    obs = BlackboxObservation(SCENARIO, (*CRASH, replied), (wrapped,), LEDGER, LEDGER, 0)
    assert check_blackbox(obs) == []
    invented = request(user(PROMPT), calling(CHARGE), result("toolu_1", "charged 99 EUR"))
    obs = BlackboxObservation(SCENARIO, (*CRASH, replied), (invented,), LEDGER, LEDGER, 0)
    assert codes(obs) == ["REPAIR_MISCLASSIFIED"]


def test_reminders_an_agent_rebuilds_on_resume_are_not_its_prompt() -> None:
    # Qwen Code 0.24.4 (measured): the prompt wrapped in <system-reminder>
    # blocks, rebuilt on resume in another order; the prompt itself is kept.
    env = "<system-reminder>\nskills: a, b\n</system-reminder>\n"
    date = "<system-reminder>\nThe current date is: Thursday.\n</system-reminder>\n"
    crash = (request(user(env + date + PROMPT)), *CRASH[1:])
    kept = request(user(env + PROMPT + "\n" + date + "Continue."), calling(CHARGE),
                   result("toolu_1", UNKNOWN, True))  # fmt: skip
    obs = BlackboxObservation(SCENARIO, crash, (kept,), LEDGER, LEDGER, 0)
    assert codes(obs) == []
    # The same reminders around another prompt: the session was not found.
    lost = request(user(env + date + "Continue."))
    assert codes(BlackboxObservation(SCENARIO, crash, (lost,), LEDGER, LEDGER, 0)) == [
        "SESSION_NOT_FOUND"]
