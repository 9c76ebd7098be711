# The child side of a LangGraph app case (`python -m faultlab.lab.apps.lgchild`):
# it imports the user's factory, hands it a scripted chat model, the
# scenario's tools and a reporting proxy around a SqliteSaver, and drives
# the graph through the case's turns.  Every boundary is reported to the
# lab's gate over its Unix socket (GateClient); the lab SIGKILLs this
# process at the armed one.  This module imports langgraph and langchain at
# import time, so only this child process ever loads them: the lab proper
# stays importable without the optional extra.
from __future__ import annotations

import errno
import importlib
import inspect
import sqlite3
import sys
import threading
from collections import Counter
from collections.abc import AsyncIterator, Iterator, Sequence
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)
from langgraph.checkpoint.sqlite import SqliteSaver
from pydantic import create_model

from faultlab.lab.apps.appspec import AppSpecError, import_app, refuse_other_framework, run_child
from faultlab.lab.apps.callorder import CallOrder
from faultlab.lab.apps.lgstate import read_thread, to_history
from faultlab.lab.apps.script import (
    argument_names,
    call_id,
    child_arguments,
    run_tool_body,
    scripted_step,
)
from faultlab.lab.read.histories import Call, History, pairing_problems
from faultlab.lab.servers.gate import GateClient
from faultlab.lab.servers.ledger import LedgerWriter
from faultlab.scenario import Scenario, load_scenario
from faultlab.scenario.model import ToolSpec

__all__ = ["AppSpecError", "CheckpointProbe", "ScriptedChatModel", "main", "preload"]

THREAD = "faultlab-case"


class ScriptedChatModel(BaseChatModel):
    """Answers by position in the history: the turn whose user text is the
    last user message, the step given by the assistant messages since that
    message was first sent.
    So a resumed process answers exactly as the killed one would have.  A
    history a model API would reject (an unanswered call) is rejected."""

    scenario: Any
    gate: Any
    order: Any = None  # the CallOrder its answers' calls will run in

    @property
    def _llm_type(self) -> str:
        return "faultlab-scripted"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:
        return self  # the script already knows which tools it calls

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None,
                  **kwargs: Any) -> ChatResult:  # fmt: skip
        history = to_history(messages)
        self.gate.reach("model/request", digest=history.digest(), count=len(history.messages))
        problems = pairing_problems(history)
        if problems:
            self.gate.note("model/rejected", problems=problems)
            raise ValueError(f"400 invalid request: {problems[0]}")
        answer = self._answer(history)
        if self.order is not None:
            self.order.expect(to_history(answer).calls())
        self.gate.reach("model/answered", calls=[c["id"] for c in answer.tool_calls])
        return ChatResult(generations=[ChatGeneration(message=answer)])

    def _answer(self, history: History) -> AIMessage:
        turn, step, spec = scripted_step(self.scenario, history)
        if spec is None:
            return AIMessage(content="Done.")
        calls = [{"name": c.tool, "args": dict(c.arguments), "id": call_id(turn, step, i),
                  "type": "tool_call"} for i, c in enumerate(spec.tool_calls)]  # fmt: skip
        return AIMessage(content="".join(spec.chunks), tool_calls=calls)


# The id of the tool call a scripted tool is running, when it was invoked
# with the whole tool call (ToolNode, `tool.invoke(call)`).
_CALL_ID: ContextVar[str | None] = ContextVar("faultlab_tool_call_id", default=None)


class _ScriptedTool(StructuredTool):
    """A StructuredTool that learns the id of the call it runs without
    asking for it in its schema (no InjectedToolCallId): so a tool node that
    invokes it with the arguments alone works too."""

    def run(self, tool_input: Any, *args: Any, **kwargs: Any) -> Any:
        token = _CALL_ID.set(kwargs.get("tool_call_id"))
        try:
            return super().run(tool_input, *args, **kwargs)
        finally:
            _CALL_ID.reset(token)

    async def arun(self, tool_input: Any, *args: Any, **kwargs: Any) -> Any:
        token = _CALL_ID.set(kwargs.get("tool_call_id"))
        try:
            return await super().arun(tool_input, *args, **kwargs)
        finally:
            _CALL_ID.reset(token)


def _tool(spec: ToolSpec, scenario: Scenario, gate: GateClient, ledger: LedgerWriter,
          order: CallOrder) -> BaseTool:  # fmt: skip
    fields: dict[str, Any] = {name: (Any, None) for name in argument_names(spec, scenario)}
    schema = create_model(f"{spec.name}_args", **fields)

    def body(**arguments: Any) -> str:
        given = {k: v for k, v in arguments.items() if v is not None}
        call = _CALL_ID.get() or order.identify(spec.name, given)
        if call is None:
            raise ValueError(f"faultlab: {spec.name} was invoked with arguments {given}, which "
                             "no unanswered tool call of the model asked for; invoke a "
                             "scripted tool with the model's tool call")  # fmt: skip
        with order.turn(call):  # parallel calls take turns: stable kill points
            failed, text = run_tool_body(spec, gate, ledger, call, given)
        if failed:
            raise ValueError(text)
        return text

    return _ScriptedTool(name=spec.name, func=body, args_schema=schema,
                         description=f"the scenario's {spec.name} tool")  # fmt: skip


def _calls_in(values: Any) -> tuple[list[str], list[str]]:
    """Tool call ids asked and answered by the messages in `values`."""
    asked: list[str] = []
    answered: list[str] = []
    items = values if isinstance(values, list) else [values]
    for m in items:
        if isinstance(m, AIMessage):
            asked.extend(str(c["id"]) for c in m.tool_calls)
        elif isinstance(m, ToolMessage):
            answered.append(m.tool_call_id)
    return asked, answered


class CheckpointProbe(BaseCheckpointSaver[str]):
    """Wraps the app's saver: reports each write started and completed (with
    the tool calls it makes durable) and fails the armed one with EIO."""

    def __init__(self, inner: SqliteSaver, gate: GateClient, fail: str | None, *,
                 messages_key: str = "messages") -> None:  # fmt: skip
        super().__init__(serde=inner.serde)
        self.inner, self.gate, self.fail = inner, gate, fail
        self.messages_key = messages_key
        self._counts: Counter[str] = Counter()
        self._lock = threading.Lock()

    def _start(self, boundary: str, **detail: Any) -> None:
        with self._lock:
            self._counts[boundary] += 1
            n = self._counts[boundary]
        self.gate.reach(boundary, **detail)
        if self.fail == f"{boundary}#{n}":
            self.gate.note("app/ioerror", at=f"{boundary}#{n}")
            raise OSError(errno.EIO, "faultlab: injected I/O error")

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return self.inner.get_tuple(config)

    def list(self, config: RunnableConfig | None, *, filter: dict[str, Any] | None = None,
             before: RunnableConfig | None = None,
             limit: int | None = None) -> Iterator[CheckpointTuple]:  # fmt: skip
        return self.inner.list(config, filter=filter, before=before, limit=limit)

    def put(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
            new_versions: ChannelVersions) -> RunnableConfig:  # fmt: skip
        asked, answered = _calls_in(checkpoint["channel_values"].get(self.messages_key, []))
        self._start("checkpoint/put", asked=asked, answered=answered)
        saved = self.inner.put(config, checkpoint, metadata, new_versions)
        self.gate.reach("checkpoint/put-done", asked=asked, answered=answered)
        return saved

    def put_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]],
                   task_id: str, task_path: str = "") -> None:  # fmt: skip
        asked: list[str] = []
        answered: list[str] = []
        for channel, value in writes:
            if channel == self.messages_key:
                a, b = _calls_in(value)
                asked += a
                answered += b
        self._start("checkpoint/writes", asked=asked, answered=answered)
        self.inner.put_writes(config, writes, task_id, task_path)
        self.gate.reach("checkpoint/writes-done", asked=asked, answered=answered)

    def delete_thread(self, thread_id: str) -> None:
        self.inner.delete_thread(thread_id)

    def get_next_version(self, current: str | None, channel: None) -> str:
        return self.inner.get_next_version(current, channel)

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return self.get_tuple(config)

    async def alist(self, config: RunnableConfig | None, *, filter: dict[str, Any] | None = None,
                    before: RunnableConfig | None = None,
                    limit: int | None = None) -> AsyncIterator[CheckpointTuple]:  # fmt: skip
        for item in self.list(config, filter=filter, before=before, limit=limit):
            yield item

    async def aput(self, config: RunnableConfig, checkpoint: Checkpoint,
                   metadata: CheckpointMetadata,
                   new_versions: ChannelVersions) -> RunnableConfig:  # fmt: skip
        return self.put(config, checkpoint, metadata, new_versions)

    async def aput_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]],
                          task_id: str, task_path: str = "") -> None:  # fmt: skip
        self.put_writes(config, writes, task_id, task_path)


def _app(spec: str) -> tuple[Any, Any, str]:
    """The factory of MODULE:FACTORY, the module's `before_resume` (or
    None) and the state key holding its conversation (`messages_key`,
    default `messages`)."""
    module, factory = import_app(spec, "langgraph", takes="model, tools, checkpointer")
    module_name = module.__name__
    key = getattr(module, "messages_key", "messages")
    if not isinstance(key, str) or not key:
        raise AppSpecError(f"{module_name}.messages_key must be a state key (a string), "
                           f"not {key!r}")  # fmt: skip
    return factory, getattr(module, "before_resume", None), key


def _built(factory: Any, name: str, checkpointer: CheckpointProbe, **given: Any) -> Any:
    """The app's graph, checked to be a compiled LangGraph graph persisted
    by the checkpointer it was given."""
    try:
        graph = factory(checkpointer=checkpointer, **given)
    except Exception as error:
        raise AppSpecError(f"{name}(model=..., tools=..., checkpointer=...) raised "
                           f"{type(error).__name__}: {error}") from None  # fmt: skip
    kind = f"{type(graph).__module__}.{type(graph).__qualname__}"
    refuse_other_framework(graph, name, "langgraph")
    if hasattr(graph, "compile") and not hasattr(graph, "get_state"):
        raise AppSpecError(f"{name} returned an uncompiled {type(graph).__name__}: return "
                           "builder.compile(checkpointer=checkpointer)")  # fmt: skip
    if not (hasattr(graph, "invoke") and hasattr(graph, "get_state")):
        raise AppSpecError(f"{name} returned {kind}, not a compiled LangGraph graph")
    if getattr(graph, "checkpointer", None) is not checkpointer:
        raise AppSpecError(f"{name} returned a graph without the checkpointer it was passed: "
                           "compile it with checkpointer=checkpointer (faultlab tests the "
                           "thread it persists)")  # fmt: skip
    return graph


def _hook(before_resume: Any, graph: Any, config: RunnableConfig, durability: str) -> None:
    """The app's repair; told the durability mode when it takes a
    `durability` argument (or **kwargs), so one hook is right in every mode."""
    try:
        parameters = inspect.signature(before_resume).parameters.values()
    except (TypeError, ValueError):
        parameters = ()  # type: ignore[assignment]
    if any(p.name == "durability" or p.kind is p.VAR_KEYWORD for p in parameters):
        before_resume(graph, config, durability=durability)
    else:
        before_resume(graph, config)


def preload(app: str) -> None:
    """What the app fork server imports once before it forks the children
    (faultlab/lab/apps/forkserver.py): this module (so the framework) and the
    user's MODULE of `app` (MODULE:FACTORY).  Only imports: a graph built
    here would start the framework's threads in the server."""
    importlib.import_module(app.rpartition(":")[0])


def _unanswered(db: str, key: str) -> list[Call]:
    """The calls the persisted thread leaves unanswered, in call order:
    what a resumed graph may run now."""
    durable = read_thread(Path(db), THREAD, messages_key=key).durable()
    results = durable.results()
    return [c for c in durable.calls() if c.id not in results]


def main(argv: Sequence[str] | None = None) -> int:
    args = child_arguments("faultlab.lab.apps.lgchild", argv, modes=("async", "exit", "sync"),
                           actions=("resume", "resend", "hook"),
                           store="the SqliteSaver's database")  # fmt: skip
    return run_child("langgraph", args.app, lambda: _drive(args))


def _drive(args: Any) -> int:
    scenario = load_scenario(args.scenario)
    gate = GateClient(args.gate)
    ledger = LedgerWriter(args.ledger)
    factory, before_resume, key = _app(args.app)
    gate.note("app/state", messagesKey=key)
    if before_resume is not None:
        gate.note("app/hook")  # the lab plans the `hook` resume style only then
    saver = SqliteSaver(sqlite3.connect(args.db, check_same_thread=False))
    checkpointer = CheckpointProbe(saver, gate, args.fail, messages_key=key)
    order = CallOrder(late=lambda call: gate.note("app/call-order-late", callId=call))
    model = ScriptedChatModel(scenario=scenario, gate=gate, order=order)
    tools = [_tool(t, scenario, gate, ledger, order) for t in scenario.tools]
    graph = _built(factory, args.app.rpartition(":")[2], checkpointer, model=model, tools=tools)
    config: RunnableConfig = {"configurable": {"thread_id": THREAD}}
    first = args.from_turn
    if args.action != "run":
        gate.note("app/resume", style=args.action, turn=first)
        if args.action == "hook" and before_resume is not None:
            _hook(before_resume, graph, config, args.durability)
        order.expect(_unanswered(args.db, key))
        if args.action == "resend" or graph.get_state(config).created_at is None:
            # Nothing durable to resume from (or the user's own way): send again.
            graph.invoke({key: [HumanMessage(scenario.turns[first].user)]}, config,
                         durability=args.durability)  # fmt: skip
        else:
            graph.invoke(None, config, durability=args.durability)
        gate.reach("invoke/end", turn=first)
        first += 1
    for turn in range(first, len(scenario.turns)):
        gate.note("app/turn", turn=turn)
        graph.invoke({key: [HumanMessage(scenario.turns[turn].user)]}, config,
                     durability=args.durability)  # fmt: skip
        gate.reach("invoke/end", turn=turn)
    return 0


if __name__ == "__main__":
    sys.exit(main())
