# faultlab.recipes.pydantic_ai in-process on pydantic-ai's own message
# types: the class of each answer follows the framework's evidence (a
# complete response's calls may have run, an interrupted one's never ran),
# the repaired history is one pydantic-ai runs without re-executing the
# call or refusing the next prompt, and a consistent history is left alone.
# The model is pydantic-ai's FunctionModel (a real part, no mock).
from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("pydantic_ai")

from pydantic_ai import Agent, Tool
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from faultlab.lab.apps.pastate import to_history
from faultlab.lab.read.histories import classify_result, pairing_problems
from faultlab.recipes.pydantic_ai import (
    TOOL_NOT_STARTED,
    TOOL_OUTCOME_UNKNOWN,
    repair_dangling_calls,
)

PAY = ModelRequest(parts=[UserPromptPart("pay 40")])
CALL = ToolCallPart("charge_card", {"amount": 40}, tool_call_id="c1")
ASKED: list[ModelMessage] = [PAY, ModelResponse(parts=[TextPart("Charging."), CALL])]


def _answer(messages: list[ModelMessage], call_id: str = "c1") -> str | None:
    found = to_history(messages).results().get(call_id)
    return classify_result(found)


def test_a_call_of_a_complete_response_is_answered_outcome_unknown() -> None:
    repaired, calls = repair_dangling_calls(ASKED)
    assert [(c.call_id, c.code) for c in calls] == [("c1", TOOL_OUTCOME_UNKNOWN)]
    assert _answer(repaired) == "unknown"
    assert pairing_problems(to_history(repaired)) == []
    assert repair_dangling_calls(repaired) == (repaired, [])  # idempotent


def test_a_call_of_an_interrupted_response_is_answered_not_started() -> None:
    cut = [PAY, ModelResponse(parts=[CALL], state="interrupted")]
    repaired, calls = repair_dangling_calls(cut)
    assert [c.code for c in calls] == [TOOL_NOT_STARTED]
    assert _answer(repaired) == "not-started"


def test_an_interior_gap_is_answered_in_the_request_that_follows() -> None:
    later = ModelRequest(parts=[UserPromptPart("and now?")])
    history = [*ASKED, later, ModelResponse(parts=[TextPart("ok")])]
    repaired, calls = repair_dangling_calls(history)
    assert len(repaired) == len(history) and len(calls) == 1
    assert isinstance(repaired[2], ModelRequest)
    assert isinstance(repaired[2].parts[0], ToolReturnPart)
    assert pairing_problems(to_history(repaired)) == []


def test_a_consistent_history_is_left_alone() -> None:
    done = ModelRequest(parts=[ToolReturnPart("charge_card", "charged", tool_call_id="c1")])
    history = [*ASKED, done, ModelResponse(parts=[TextPart("Charged.")])]
    assert repair_dangling_calls(history) == (history, [])
    assert repair_dangling_calls([]) == ([], [])


def test_pydantic_ai_continues_a_repaired_history_without_running_the_call() -> None:
    seen: list[list[ModelMessage]] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(list(messages))
        return ModelResponse(parts=[TextPart("I will check the charge first.")])

    def charge_card(amount: int) -> str:
        raise AssertionError("the repaired history must not run the call again")

    agent: Any = Agent(FunctionModel(model), tools=[Tool(charge_card)])
    repaired, _ = repair_dangling_calls(ASKED)
    asyncio.run(agent.run(None, message_history=repaired))  # pydantic-ai's own resume
    assert _answer(seen[-1]) == "unknown"  # the model was told
    asyncio.run(agent.run("pay 40", message_history=repaired))  # a new prompt is accepted
    assert len(seen) == 2
