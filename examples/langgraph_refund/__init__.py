# A small LangGraph app to copy: a model node and a tool node over a
# MessagesState, persisted by whatever checkpointer it is given.  faultlab
# crash-tests it with `faultlab explore --app
# langgraph:examples.langgraph_refund:build_graph scenarios/payment.toml`.
from __future__ import annotations

from typing import Any

from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

__all__ = ["build_graph"]


def build_graph(*, model: Any, tools: list[Any], checkpointer: Any) -> Any:
    """The app's graph: the model answers, its tool calls run, repeat."""
    bound = model.bind_tools(tools)

    def call_model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [bound.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("model", call_model)
    builder.add_node("tools", ToolNode(tools))
    builder.add_edge(START, "model")
    builder.add_conditional_edges("model", tools_condition)
    builder.add_edge("tools", "model")
    return builder.compile(checkpointer=checkpointer)
