# faultlab.recipes.langgraph in-process on the example graph with the
# framework's in-memory saver: the class of each answer follows the durable
# evidence (the tools task scheduled or not), and a consistent thread is
# left alone.  The model is a LangChain fake chat model that is never called.
from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("langgraph")

from langchain_core.language_models.fake_chat_models import (
    FakeMessagesListChatModel,
)
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from examples.langgraph_refund import build_graph
from faultlab.lab.read.histories import Message, classify_result
from faultlab.recipes.langgraph import (
    TOOL_NOT_STARTED,
    TOOL_OUTCOME_UNKNOWN,
    repair_dangling_calls,
)

CONFIG: Any = {"configurable": {"thread_id": "t"}}
CALL = {"name": "charge_card", "args": {"amount": 40}, "id": "c1", "type": "tool_call"}
ASKED = {"messages": [HumanMessage("pay"), AIMessage("", tool_calls=[CALL])]}


@tool
def charge_card(amount: int) -> str:
    """Charge the card."""
    raise AssertionError("the recipe must not run the tool")


class _Model(FakeMessagesListChatModel):
    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self


def _graph() -> Any:
    return build_graph(model=_Model(responses=[AIMessage("unused")]), tools=[charge_card],
                       checkpointer=InMemorySaver())  # fmt: skip


def _last(graph: Any) -> ToolMessage:
    message = graph.get_state(CONFIG).values["messages"][-1]
    assert isinstance(message, ToolMessage)
    return message


def test_a_scheduled_call_is_answered_outcome_unknown() -> None:
    graph = _graph()
    graph.update_state(CONFIG, ASKED, as_node="model")
    assert "tools" in graph.get_state(CONFIG).next
    repaired = repair_dangling_calls(graph, CONFIG)
    assert [(r.call_id, r.code) for r in repaired] == [("c1", TOOL_OUTCOME_UNKNOWN)]
    answer = _last(graph)
    assert answer.tool_call_id == "c1"
    assert classify_result(Message("tool", str(answer.content), (), "c1", True)) == "unknown"
    assert graph.get_state(CONFIG).next == ("model",)
    assert repair_dangling_calls(graph, CONFIG) == []  # idempotent


def test_a_call_no_checkpoint_scheduled_is_answered_not_started() -> None:
    graph = _graph()
    graph.update_state(CONFIG, ASKED, as_node="tools")
    assert "tools" not in graph.get_state(CONFIG).next
    repaired = repair_dangling_calls(graph, CONFIG)
    assert [r.code for r in repaired] == [TOOL_NOT_STARTED]
    answer = _last(graph)
    assert classify_result(Message("tool", str(answer.content), (), "c1", True)) == "not-started"


def test_a_consistent_thread_is_left_alone() -> None:
    graph = _graph()
    assert repair_dangling_calls(graph, CONFIG) == []
    graph.update_state(CONFIG, {"messages": [HumanMessage("hi"), AIMessage("hello")]},
                       as_node="model")  # fmt: skip
    before = graph.get_state(CONFIG).config
    assert repair_dangling_calls(graph, CONFIG) == []
    assert graph.get_state(CONFIG).config == before
