# The model APIs' pairing rules and result classes on normalised histories.
from __future__ import annotations

from faultlab.lab.read.histories import Call, History, Message, classify_result, pairing_problems

CALL = Call("c1", "charge_card", {"amount": 40})


def test_a_paired_history_is_valid_and_its_digest_is_stable() -> None:
    good = History((Message("user", "hi"), Message("assistant", "", (CALL,)),
                    Message("tool", "ok", call_id="c1"), Message("assistant", "done")))  # fmt: skip
    assert pairing_problems(good) == []
    assert good.digest() == History.from_json(good.to_json()).digest()
    assert good.digest() != History(good.messages[:-1]).digest()


def test_each_pairing_rule_is_reported() -> None:
    dangling = History((Message("assistant", "", (CALL,)), Message("user", "Continue.")))
    orphan = History((Message("user", "hi"), Message("tool", "ok", call_id="zz")))
    twice = History((Message("assistant", "", (CALL,)), Message("tool", "a", call_id="c1"),
                     Message("tool", "b", call_id="c1")))  # fmt: skip
    answered = (Message("assistant", "", (CALL,)), Message("tool", "a", call_id="c1"))
    reused = History((*answered, *answered))
    assert "left unanswered" in pairing_problems(dangling)[0]
    assert "which no earlier assistant message called" in pairing_problems(orphan)[0]
    assert "answered twice" in pairing_problems(twice)[0]
    assert "used twice" in pairing_problems(reused)[0]


def test_results_are_classified_by_what_they_tell_the_model() -> None:
    def shown(text: str, error: bool = True) -> str | None:
        return classify_result(Message("tool", text, call_id="c1", is_error=error))

    assert classify_result(None) is None
    assert shown("TOOL_OUTCOME_UNKNOWN: it may have run; verify first") == "unknown"
    assert shown("TOOL_NOT_STARTED: the tool was not run") == "not-started"
    assert shown("[Request interrupted by user for tool use]") == "aborted"
    assert shown("card declined") == "error"
    assert shown("charged 40", error=False) == "success"
