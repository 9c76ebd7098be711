# The same app with faultlab's LangGraph recipe installed: before a thread is
# resumed after a crash, its unanswered tool calls are answered with
# TOOL_NOT_STARTED or TOOL_OUTCOME_UNKNOWN (faultlab/recipes/langgraph.py).
# faultlab calls `before_resume` in its `hook` resume style; an app calls
# it wherever it resumes a thread.
from __future__ import annotations

from typing import Any

from examples.langgraph_refund import build_graph
from faultlab.recipes.langgraph import repair_dangling_calls

__all__ = ["before_resume", "build_graph"]


def before_resume(graph: Any, config: Any, *, durability: str = "async") -> None:
    # faultlab tells the hook the durability the graph runs in; an app passes
    # the mode it invokes its graph with.
    repair_dangling_calls(graph, config, durability=durability)
