# The app oracle on hand-made observations: each code fires on the evidence
# it is about and stays quiet on a clean recovery.  (The integration tests in
# test_framework_apps.py get the same codes from real LangGraph children.)
from __future__ import annotations

from typing import Any

from faultlab.lab.oracle.apps import AppObservation, check_app
from faultlab.lab.read.histories import Call, History, Message
from faultlab.scenario import load_scenario
from tests.conftest import REPO, SCENARIOS

FIXTURES = REPO / "tests" / "fixtures" / "lgapps"
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


def test_a_recovery_that_ends_waiting_on_the_call_failed_to_resume() -> None:
    # ADK's invocation resumption that stops at a stored call (as on a
    # long-running one): it exits 0, nothing is charged again, and the
    # thread ends on the call, which nothing will ever answer.
    stalled = _obs(crash=(), final=History((USER, ASK)))
    assert _codes(stalled) == ["RESUME_FAILED"]
    assert "c1" in check_app(stalled)[0].message
    answered = History((USER, ASK, Message("tool", "charged", (), "c1")))
    assert _codes(_obs(crash=(), final=answered)) == []


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


# -- issue 32: the same exemptions in every check, effects by key -------------

LOOKUP_CHARGE = load_scenario(str(FIXTURES / "lookup_charge.toml"))
KEYED = load_scenario(str(FIXTURES / "keyed_charge.toml"))
TWO = Message("assistant", "Both.", (Call("c0", "lookup_order"), Call("c1", "charge_card")))
LOOKED = Message("tool", "order 7: 40.00 EUR", (), "c0")
CHARGED = Message("tool", "charged 40.00 EUR", (), "c1")


def _lookup_started(n: int = 1) -> dict[str, Any]:
    return {"boundary": "tool/started", "n": n, "callId": "c0", "tool": "lookup_order"}


def test_a_call_that_never_started_and_then_ran_once_is_not_misclassified() -> None:
    # LangGraph `sync`: the step with the call finished, its checkpoint was not
    # written; the recipe leaves the call to invoke(None), which runs it once.
    final = History((USER, ASK, CHARGED, Message("assistant", "k")))
    assert _codes(_obs(style="hook", crash=(), resume=(_started(1),), final=final)) == []
    # Run twice on resume, it is no longer "ran exactly once": misclassified.
    twice = (_started(1), _started(2))
    assert "REPAIR_MISCLASSIFIED" in _codes(_obs(style="hook", crash=(), resume=twice,
                                                 final=final))  # fmt: skip
    # A started charge answered by running it again is misclassified (and a re-run).
    codes = _codes(_obs(style="hook", resume=(_started(2),), final=final))
    assert "REPAIR_MISCLASSIFIED" in codes and "UNKNOWN_OUTCOME_RERUN" in codes


def test_a_rerun_read_only_lookup_is_exempt_in_every_check() -> None:
    at_kill = History((Message("user", LOOKUP_CHARGE.turns[0].user), TWO, CHARGED))
    final = History((*at_kill.messages, LOOKED, Message("assistant", "paid")))
    observed = _obs(scenario=LOOKUP_CHARGE, style="hook", crash=(_lookup_started(),),
                    resume=(_lookup_started(2),), durable_at_kill=at_kill, final=final)  # fmt: skip
    assert _codes(observed) == []
    # The same re-run of the charge is caught, by both checks.
    wrong = _obs(scenario=LOOKUP_CHARGE, style="hook", crash=(_started(),),
                 resume=(_started(2),), ledger=(CHARGE, CHARGE),
                 durable_at_kill=History((at_kill.messages[0], TWO, LOOKED)),
                 final=History((at_kill.messages[0], TWO, LOOKED, CHARGED)))  # fmt: skip
    assert {"REPAIR_MISCLASSIFIED", "UNKNOWN_OUTCOME_RERUN", "SIDE_EFFECT_DUPLICATED"} <= set(
        _codes(wrong))


def test_effects_are_counted_by_idempotency_key() -> None:
    keyed = {**CHARGE, "key": "c1"}
    # The re-run under the same key applied nothing more: one effect, no re-run harm.
    absorbed = _obs(scenario=KEYED, resume=(_started(2),), ledger=(keyed,),
                    reference_ledger=(keyed,))  # fmt: skip
    assert _codes(absorbed) == []
    # Two keys (the model asked again under a new call id): a duplicate.
    other = {**CHARGE, "callId": "c2", "key": "c2"}
    assert _codes(_obs(scenario=KEYED, ledger=(keyed, other),
                       reference_ledger=(keyed,))) == ["SIDE_EFFECT_DUPLICATED"]  # fmt: skip


def _rejected() -> dict[str, Any]:
    return {"boundary": "tool/returned", "n": 1, "callId": "c1", "tool": "charge_card",
            "rejected": True}  # fmt: skip


def test_a_rerun_of_a_call_rejected_before_any_effect_is_still_a_rerun() -> None:
    # The tool rejected c1 before its effect (`retry_if`: the gate saw the
    # rejection, the ledger holds no effect), the kill came before the
    # rejection was durable, and the next run ran c1 again without telling
    # the model.  The app could not know the call had no effect: the same
    # decision double-charges when the body got further, so it is judged
    # (docs/decisions.md), with the evidence that no harm was done this time.
    crash = (_started(), _rejected())
    violations = check_app(_obs(crash=crash, resume=(_started(2),), ledger=(), reference_ledger=()))
    assert [v.code for v in violations] == ["UNKNOWN_OUTCOME_RERUN"]
    assert violations[0].evidence["effectApplied"] is False
    assert "rejected it before any effect" in violations[0].message
    # A call with an effect in the ledger is not said to be harmless.
    applied = check_app(_obs(crash=crash, resume=(_started(2),), ledger=(CHARGE,)))
    assert applied[0].evidence["effectApplied"] is True


def test_a_call_rejected_before_any_effect_and_answered_is_not_a_rerun() -> None:
    # The other way: the app's repair answered the rejected call (outcome
    # unknown) instead of running it, or the rejection itself was durable;
    # nothing ran it again, so nothing is judged.
    crash = (_started(), _rejected())
    answer = Message("tool", "TOOL_OUTCOME_UNKNOWN: verify first.", (), "c1", True)
    final = History((USER, ASK, answer, Message("assistant", "ok")))
    assert _codes(_obs(crash=crash, style="hook", final=final, ledger=(),
                       reference_ledger=())) == []  # fmt: skip
    rejection = Message("tool", "amount refused, call again", (), "c1", True)
    durable = History((USER, ASK, rejection))
    assert _codes(_obs(crash=crash, resume=(_started(2),), durable_at_kill=durable,
                       ledger=(), reference_ledger=())) == []  # fmt: skip
