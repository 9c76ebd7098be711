# The app oracle on hand-made observations: each code fires on the evidence
# it is about and stays quiet on a clean recovery.  (The integration tests in
# test_framework_apps.py get the same codes from real LangGraph children.)
from __future__ import annotations

from typing import Any

from faultlab.lab.oracle.apps import AppObservation, check_app
from faultlab.lab.read.histories import Call, History, Message
from faultlab.scenario import load_scenario
from tests.conftest import SCENARIOS

PAYMENT = load_scenario(str(SCENARIOS / "payment.toml"))
USER = Message("user", PAYMENT.turns[0].user)
ASK = Message("assistant", "Charging the card.", (Call("c1", "charge_card"),))
CHARGE = {"callId": "c1", "tool": "charge_card", "arguments": {}, "key": None}


def _started(n: int = 1) -> dict[str, Any]:
    return {"boundary": "tool/started", "n": n, "callId": "c1", "tool": "charge_card"}


def _obs(**changes: Any) -> AppObservation:
    base: dict[str, Any] = dict(
        scenario=PAYMENT, crash=(_started(),), resume=(), ledger=(CHARGE,),
        reference_ledger=(CHARGE,), durable_at_kill=History((USER, ASK)),
        final=History((USER, ASK, Message("tool", "charged", (), "c1"), Message("assistant", "k"))),
        style="resume", resume_status=0,
    )  # fmt: skip
    base.update(changes)
    return AppObservation(**base)


def _codes(o: AppObservation) -> list[str]:
    return [v.code for v in check_app(o)]


def test_a_clean_recovery_has_no_code() -> None:
    assert _codes(_obs(crash=())) == []


def test_a_rerun_of_a_started_call_and_its_second_charge() -> None:
    codes = _codes(_obs(resume=(_started(2),), ledger=(CHARGE, CHARGE)))
    assert codes == ["UNKNOWN_OUTCOME_RERUN", "SIDE_EFFECT_DUPLICATED"]


def test_a_started_call_that_was_not_durable_is_intent_lost() -> None:
    assert "TOOL_INTENT_LOST" in _codes(_obs(durable_at_kill=History((USER,))))


def test_a_rejected_request_is_an_invalid_history() -> None:
    rejected = {"fact": "model/rejected", "problems": ["message 2 (user): c1 left unanswered"]}
    assert _codes(_obs(resume=(rejected,), resume_status=1)) == ["PROVIDER_INVALID_HISTORY"]


def test_a_hook_that_says_not_started_for_a_started_call_is_misclassified() -> None:
    wrong = Message("tool", "TOOL_NOT_STARTED: never started", (), "c1", True)
    final = History((USER, ASK, wrong, Message("assistant", "ok")))
    assert _codes(_obs(style="hook", final=final)) == ["REPAIR_MISCLASSIFIED"]
    right = Message("tool", "The outcome is unknown; verify first.", (), "c1", True)
    assert _codes(_obs(style="hook", final=History((USER, ASK, right)))) == []


def test_the_frameworks_own_interrupted_answer_is_misclassified() -> None:
    # pydantic-ai's repair_messages (resume style `repair`) answers every
    # dangling call alike: right for neither a started call nor one that
    # never started.
    said = Message("tool", "The tool call was interrupted before a result was produced.", (), "c1")
    final = History((USER, ASK, said, USER, Message("assistant", "ok")))
    assert _codes(_obs(style="repair", final=final)) == ["REPAIR_MISCLASSIFIED"]
    assert _codes(_obs(style="repair", final=final, crash=())) == ["REPAIR_MISCLASSIFIED"]


def test_work_after_a_failed_checkpoint_write() -> None:
    crash = ({"fact": "app/ioerror", "at": "checkpoint/put#3"}, _started())
    codes = _codes(_obs(crash=crash))
    assert "DISPATCH_AFTER_FAILED_CHECKPOINT" in codes


def test_work_started_while_the_failing_write_was_in_flight() -> None:
    # LangGraph's async mode: the tool starts while the write scheduling it
    # runs in the background; the write then fails.
    put = {"boundary": "checkpoint/put", "n": 3}
    crash = (put, _started(), {"fact": "app/ioerror", "at": "checkpoint/put#3"})
    assert "DISPATCH_AFTER_FAILED_CHECKPOINT" in _codes(_obs(crash=crash))
    # A write that fails before anything else runs (sync mode) stops the app.
    quiet = (put, {"fact": "app/ioerror", "at": "checkpoint/put#3"})
    assert "DISPATCH_AFTER_FAILED_CHECKPOINT" not in _codes(_obs(crash=quiet, resume=()))


def test_a_forked_checkpoint_chain_is_a_seq_fork() -> None:
    assert _codes(_obs(crash=(), forks=("1ef-a",))) == ["SEQ_FORK"]
    assert _codes(_obs(crash=(), forks=())) == []
