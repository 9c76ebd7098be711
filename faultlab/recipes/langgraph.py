# The LangGraph repair: before resuming a thread after a crash, answer every
# tool call the persisted state leaves unanswered, so the resumed graph
# neither runs a call that may have taken effect again nor sends the model
# a history its API rejects.  The class comes from the framework's own
# evidence: a call whose tools task a durable checkpoint had scheduled may
# have run (TOOL_OUTCOME_UNKNOWN); a call that no durable checkpoint
# scheduled never started (TOOL_NOT_STARTED).  The answers are written as
# if the tools node had produced them (`update_state(..., as_node=...)`),
# so `invoke(None)` continues with the model.
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.runnables import RunnableConfig

# The codes and texts are shared with the other recipes (faultlab/recipes/guidance.py).
from faultlab.recipes.guidance import (
    TOOL_NOT_STARTED,
    TOOL_OUTCOME_UNKNOWN,
    RepairedCall,
    guidance,
)

__all__ = [
    "TOOL_NOT_STARTED",
    "TOOL_OUTCOME_UNKNOWN",
    "RepairedCall",
    "guidance",
    "repair_dangling_calls",
]


def repair_dangling_calls(graph: Any, config: RunnableConfig, *, tools_node: str = "tools",
                          messages_key: str = "messages", durability: str = "async",
                          safe_tools: Iterable[str] = ()) -> list[RepairedCall]:  # fmt: skip
    """Answer each unanswered tool call of the thread `config` names, as the
    node `tools_node`; return what was answered (nothing when the thread is
    consistent, so calling it on every start is safe).  `safe_tools` are the
    read-only or idempotent tools whose retry the guidance may allow;
    `durability` the mode the app runs its graph in (only `sync` proves that
    a call of a step whose checkpoint is not yet written never started)."""
    state = graph.get_state(config)
    if any(t.name != tools_node and t.result is not None for t in state.tasks):
        # A step finished (its writes are durable) but its checkpoint is not:
        # the snapshot shows its messages, an update would build on the
        # checkpoint without them.  Under `sync` its calls never started and
        # invoke(None) runs them; otherwise the tools may already have run
        # (async and exit write behind the work): apply the step's writes
        # without running anything more, and answer its calls below.
        if durability == "sync":
            return []
        graph.invoke(None, config, interrupt_before=[tools_node], durability="sync")
        state = graph.get_state(config)
    messages = state.values.get(messages_key, []) if state.values else []
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    dangling = [(str(c["id"]), c["name"]) for m in messages if isinstance(m, AIMessage)
                for c in m.tool_calls if c["id"] not in answered]  # fmt: skip
    if not dangling:
        return []
    # The tools task's own result, already durable as pending writes, is
    # what invoke(None) will apply: nothing is unknown then.
    if any(t.name == tools_node and t.result is not None for t in state.tasks):
        return []
    scheduled = tools_node in state.next
    safe = set(safe_tools)
    repaired = [RepairedCall(call_id, name, TOOL_OUTCOME_UNKNOWN if scheduled else TOOL_NOT_STARTED)
                for call_id, name in dangling]  # fmt: skip
    answers = [ToolMessage(guidance(r.code, r.name, r.call_id, safe_to_retry=r.name in safe),
                           tool_call_id=r.call_id, name=r.name, status="error")
               for r in repaired]  # fmt: skip
    graph.update_state(config, {messages_key: answers}, as_node=tools_node)
    return repaired
