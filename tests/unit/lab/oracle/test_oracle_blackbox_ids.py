# Call ids in the black-box oracle (issue 33): a call id the agent holds
# twice is PROVIDER_INVALID_HISTORY when the model server handed it out once
# (the agent reused it), and not the agent's fault when the server itself
# handed it out in two answers (a lapse of faultlab's, never a false alarm).
from __future__ import annotations

from pathlib import Path
from typing import Any

from faultlab.lab.oracle.blackbox import BlackboxObservation, check_blackbox
from faultlab.lab.read.histories import Call, History, Message, pairing_problems
from faultlab.scenario import load_scenario

SCENARIO = load_scenario(Path(__file__).resolve().parents[4] / "scenarios" / "payment.toml")
PROMPT = "Refund order 7"
ARGS = {"amount": 40}
UNKNOWN = "TOOL_OUTCOME_UNKNOWN: the outcome is unknown; verify before retrying"
LEDGER = ({"callId": "mcp-1", "tool": "charge_card", "arguments": ARGS, "key": None},)


def request(*messages: Message) -> dict[str, Any]:
    return {"boundary": "model/request", "history": History(messages).to_json()}


def answered(call_id: str) -> dict[str, Any]:
    """The model server's note of an answer that handed out `call_id`."""
    return {"fact": "model/response", "calls": [{"id": call_id, "name": "charge_card",
                                                "arguments": ARGS}]}  # fmt: skip


# The agent recorded nothing at the kill (before the tool server got the call).
CRASH = (request(Message("user", PROMPT)), answered("call_a"))
# Resumed: the first call is answered "unknown", the same step is called again
# under the same id (what the agent sends back, whoever chose the id).
TWICE = request(
    Message("user", PROMPT),
    Message("assistant", "", (Call("call_a", "charge_card", ARGS),)),
    Message("tool", UNKNOWN, call_id="call_a", is_error=True),
    Message("user", "Continue."),
    Message("assistant", "", (Call("call_a", "charge_card", ARGS),)),
    Message("tool", "charged 40", call_id="call_a"),
)


def observe(*resume: dict[str, Any]) -> BlackboxObservation:
    return BlackboxObservation(scenario=SCENARIO, crash=CRASH, resume=resume, ledger=LEDGER,
                               reference_ledger=LEDGER, resume_status=0)  # fmt: skip


def codes(obs: BlackboxObservation) -> list[str]:
    return [v.code for v in check_blackbox(obs)]


def test_an_id_the_server_handed_out_once_and_the_agent_reused_is_invalid() -> None:
    # The resumed answer had a fresh id (call_b): the agent put call_a back.
    assert codes(observe(answered("call_b"), TWICE)) == ["PROVIDER_INVALID_HISTORY"]
    found = check_blackbox(observe(answered("call_b"), TWICE))[0]
    assert "call id call_a used twice" in found.message


def test_an_id_the_server_handed_out_twice_is_not_the_agents_fault() -> None:
    assert "PROVIDER_INVALID_HISTORY" not in codes(observe(answered("call_a"), TWICE))


def test_a_reissued_id_still_needs_its_answer_after_each_call() -> None:
    # Reissued or not, a call left unanswered is still a problem.
    dangling = History((
        Message("user", PROMPT),
        Message("assistant", "", (Call("c", "charge_card", ARGS),)),
        Message("tool", "ok", call_id="c"),
        Message("assistant", "", (Call("c", "charge_card", ARGS),)),
        Message("user", "Continue."),
    ))  # fmt: skip
    assert pairing_problems(dangling, reissued={"c"}) == [
        "message 4 (user): call(s) c left unanswered before it"]
    assert "used twice" in pairing_problems(dangling)[0]
