# The LangGraph repair: before resuming a thread after a crash, answer every
# tool call the persisted state leaves unanswered (in the root graph and in
# any subgraph in flight; one answer per call, whether the calls ran as one
# tools task or one task each), so the resumed graph
# neither runs a call that may have taken effect again nor sends the model
# a history its API rejects.  The class comes from the framework's own
# evidence: a call whose tools task a durable checkpoint had scheduled may
# have run (TOOL_OUTCOME_UNKNOWN); a call that no durable checkpoint
# scheduled never started (TOOL_NOT_STARTED).  The answers are written as
# if the tools node had produced them (`update_state(..., as_node=...)`),
# so `invoke(None)` continues with the model.
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
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
    node `tools_node`, in the root graph and in every subgraph in flight
    (innermost first); return what was answered (nothing when the thread is
    consistent, so calling it on every start is safe).  `safe_tools` are the
    read-only or idempotent tools whose retry the guidance may allow;
    `durability` the mode the app runs its graph in (only `sync` proves that
    a call of a step whose checkpoint is not yet written never started)."""
    if durability not in ("exit", "async", "sync"):
        raise ValueError(f"durability {durability!r}: one of exit, async, sync")
    options = _Options(tools_node, messages_key, durability, frozenset(safe_tools))
    return _repair(graph, config, options)


@dataclass(frozen=True, slots=True)
class _Options:
    tools_node: str
    messages_key: str
    durability: str
    safe: frozenset[str]


def _repair(graph: Any, config: RunnableConfig, o: _Options) -> list[RepairedCall]:
    repaired: list[RepairedCall] = []
    # A subgraph in flight keeps its own state in its own namespace; a
    # resumed parent re-enters it from there, so its calls are repaired there.
    for task in graph.get_state(config, subgraphs=True).tasks:
        if task.result is None and task.state is not None and hasattr(task.state, "config"):
            ns = task.state.config["configurable"].get("checkpoint_ns", "")
            inner: RunnableConfig = {"configurable": {**config["configurable"],
                                                      "checkpoint_ns": ns}}  # fmt: skip
            repaired += _repair(graph, inner, o)
    return repaired + _repair_level(graph, config, o)


def _repair_level(graph: Any, config: RunnableConfig, o: _Options) -> list[RepairedCall]:
    state = graph.get_state(config)
    others = [t for t in state.tasks if t.name != o.tools_node and t.result is not None]
    nested = bool(config["configurable"].get("checkpoint_ns"))
    carried: list[Any] = []
    if others and o.durability == "sync":
        return []  # see below: its calls never started, invoke(None) runs them
    if others and nested:
        # The same inside a subgraph, which cannot be invoked on its own:
        # its step's messages are written again with the answers.
        carried = [m for t in others for m in _as_list(t.result.get(o.messages_key))]
    elif others and o.tools_node in graph.nodes:
        # A step finished (its writes are durable) but its checkpoint is not:
        # the snapshot shows its messages, an update would build on the
        # checkpoint without them.  Under `sync` its calls never started and
        # invoke(None) runs them; otherwise the tools may already have run
        # (async and exit write behind the work): apply the step's writes
        # without running anything more, and answer its calls below.
        graph.invoke(None, config, interrupt_before=[o.tools_node], durability="sync")
        state = graph.get_state(config)
    messages = state.values.get(o.messages_key, []) if state.values else []
    # The snapshot shows the results that finished tools tasks left as
    # pending writes; an update builds on the checkpoint without them, so
    # they are written again with the answers (the messages reducer keeps
    # one message per id).
    done = [m for t in state.tasks if t.name == o.tools_node and t.result
            for m in _as_list(t.result.get(o.messages_key))
            if isinstance(m, ToolMessage)]  # fmt: skip
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    answered |= {m.tool_call_id for m in done}
    dangling = [(str(c["id"]), str(c["name"])) for m in messages if isinstance(m, AIMessage)
                for c in m.tool_calls if c["id"] not in answered]  # fmt: skip
    if not dangling:
        return []  # a consistent thread, or every result is durable: invoke(None) applies them
    # A call whose tools task a durable checkpoint scheduled may have run;
    # so may one of a step whose checkpoint async or exit had not written yet.
    scheduled = o.tools_node in state.next or bool(carried)
    repaired = [RepairedCall(call_id, name, TOOL_OUTCOME_UNKNOWN if scheduled else TOOL_NOT_STARTED)
                for call_id, name in dangling]  # fmt: skip
    answers = [ToolMessage(guidance(r.code, r.name, r.call_id, safe_to_retry=r.name in o.safe),
                           tool_call_id=r.call_id, name=r.name, status="error")
               for r in repaired]  # fmt: skip
    graph.update_state(config, {o.messages_key: [*carried, *done, *answers]},
                       as_node=o.tools_node)  # fmt: skip
    return repaired


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]
