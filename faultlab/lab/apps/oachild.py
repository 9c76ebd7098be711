# The child side of an OpenAI Agents SDK app case (`python -m
# faultlab.lab.apps.oachild`): it imports the user's module, builds its
# Agent from a scripted Model (the SDK's own `Model` interface) and the
# scenario's tools (`FunctionTool`s), opens the app's own Session
# (`make_session(session_id, path)`: a `SQLiteSession`, a custom `Session`
# subclass) behind a reporting proxy, and runs each turn with
# `Runner.run(agent, input, session=...)`.  Every boundary is reported to
# the lab's gate; the lab SIGKILLs this process at the armed one.  This
# module imports `agents` at import time, so only the child loads it.  The
# entry points follow the app children's contract (`preload(app)`,
# `main(argv)`), so a fork server can preload once.
from __future__ import annotations

import argparse
import asyncio
import inspect
import sys
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import orjson
from agents import Agent, FunctionTool, Runner
from agents.items import ModelResponse, TResponseInputItem
from agents.memory import SessionABC
from agents.models.interface import Model
from agents.tool_context import ToolContext
from agents.usage import Usage
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputItem,
    ResponseOutputMessage,
    ResponseOutputText,
)

from faultlab.lab.apps.appspec import AppSpecError, import_app, refuse_other_framework, run_child
from faultlab.lab.apps.oastate import to_history
from faultlab.lab.apps.script import (
    ChildCase,
    StoreWrites,
    argument_names,
    call_id,
    child_arguments,
    reading,
    reading_error,
    request_problem,
    run_tool_body,
    scripted_step,
)
from faultlab.lab.servers.gate import GateClient
from faultlab.lab.servers.ledger import LedgerWriter
from faultlab.scenario import Scenario
from faultlab.scenario.model import ToolSpec

__all__ = ["MODES", "SESSION_ID", "ScriptedModel", "SessionProbe", "main", "preload"]

MODES = ("run",)
SESSION_ID = "faultlab-case"
MODEL_NAME = "faultlab-scripted"


class ModelRejected(Exception):
    """The scripted model refuses a history a model API would reject (400)."""


class ScriptedModel(Model):
    """The SDK's Model interface answered by position in the history
    (faultlab/lab/apps/script.py), so a fresh process answers as the killed
    one would have; a call unanswered before the next message is refused,
    as the Responses API does."""

    def __init__(self, scenario: Scenario, gate: GateClient) -> None:
        self.scenario, self.gate = scenario, gate

    def _answer(self, input: str | list[TResponseInputItem]) -> list[ResponseOutputItem]:
        items = [{"role": "user", "content": input}] if isinstance(input, str) else input
        history = to_history(items)
        problem = request_problem(self.gate, history)
        if problem:
            raise ModelRejected(f"400 {problem}")
        turn, step, spec = scripted_step(self.scenario, history)
        out: list[ResponseOutputItem] = []
        text = "Done." if spec is None else spec.text
        if text:
            part = ResponseOutputText(text=text, type="output_text", annotations=[])
            out.append(ResponseOutputMessage(id=f"msg_{turn}_{step}", role="assistant",
                                             status="completed", type="message",
                                             content=[part]))  # fmt: skip
        for i, c in enumerate(() if spec is None else spec.tool_calls):
            arguments = orjson.dumps(dict(c.arguments)).decode()
            out.append(ResponseFunctionToolCall(
                type="function_call", call_id=call_id(turn, step, i), name=c.tool,
                arguments=arguments, status="completed"))  # fmt: skip
        calls = [o.call_id for o in out if isinstance(o, ResponseFunctionToolCall)]
        self.gate.reach("model/answered", calls=calls)
        return out

    async def get_response(self, system_instructions: str | None,
                           input: str | list[TResponseInputItem], *args: Any,
                           **kwargs: Any) -> ModelResponse:  # fmt: skip
        return ModelResponse(output=self._answer(input), usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("faultlab runs apps with Runner.run (not streamed)")


def _tool(spec: ToolSpec, scenario: Scenario, gate: GateClient,
          ledger: LedgerWriter) -> FunctionTool:  # fmt: skip
    names = argument_names(spec, scenario)
    schema = {"type": "object", "properties": {name: {} for name in names}}

    async def invoke(ctx: ToolContext[Any], raw: str) -> str:
        arguments = orjson.loads(raw) if raw else {}
        # Blocking on the gate blocks the event loop: the process stands
        # still at the boundary while the lab decides.
        failed, text = run_tool_body(spec, gate, ledger, str(ctx.tool_call_id), arguments)
        if failed:
            # Answered to the model as an error, as a @function_tool answers
            # a failure (its failure_error_function): an exception raised by
            # a FunctionTool's own on_invoke_tool ends the run (UserError).
            return f"error: {text}"
        return text

    return FunctionTool(name=spec.name, description=f"the scenario's {spec.name} tool",
                        params_json_schema=schema, on_invoke_tool=invoke,
                        strict_json_schema=False)  # fmt: skip


class SessionProbe(SessionABC):
    """Wraps the app's Session: reports each `add_items` started and
    completed as the store's `history/save` and `history/save-done` (the
    boundaries of every app store, so the drive's io-error plans there
    too), with the tool calls the items ask and answer, and fails the armed
    one with EIO before the app's own write runs."""

    def __init__(self, inner: Any, gate: GateClient, fail: str | None) -> None:
        self.inner, self.writes = inner, StoreWrites(gate, fail)
        self.session_id = inner.session_id
        self.session_settings = getattr(inner, "session_settings", None)

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        return list(await self.inner.get_items(limit))

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        detail = self.writes.before(to_history(items), len(items))
        await self.inner.add_items(items)
        self.writes.after(detail)

    async def pop_item(self) -> TResponseInputItem | None:
        return await self.inner.pop_item()  # type: ignore[no-any-return]

    async def clear_session(self) -> None:
        await self.inner.clear_session()


def _module(app: str) -> tuple[ModuleType, Callable[..., Any]]:
    module, factory = import_app(app, "openai-agents")
    if not callable(getattr(module, "make_session", None)):
        raise AppSpecError(f"{module.__name__} defines no make_session(session_id, path): "
                           "an openai-agents app provides its own Session")  # fmt: skip
    return module, factory


def preload(app: str) -> None:
    """Import the framework (done by importing this module) and the user's
    module, and nothing else."""
    _module(app.removeprefix("openai-agents:"))


async def _maybe(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


async def _close(session: Any) -> None:
    close = getattr(session, "close", None)
    if callable(close):
        await _maybe(close())


async def read_session(module: ModuleType, store: Path, out: Path) -> int:
    """The `read` action: the items the app's own session finds at `store`
    (a copy of the case's store), written to `out` as the lab's History; a
    session that raises is written as the store's error."""
    try:
        session = await _maybe(module.make_session(SESSION_ID, store))
        try:
            items = list(await session.get_items())
        finally:
            await _close(session)
        answer = reading(len(items), to_history(items))
    except Exception as error:  # whatever the app's session raises is the verdict's evidence
        answer = reading_error(error)
    out.write_bytes(answer)
    return 0


async def _run(agent: Agent[Any], turn_input: str | list[TResponseInputItem],
               session: SessionProbe, context: Any, gate: GateClient,
               turn: int) -> None:  # fmt: skip
    await Runner.run(agent, turn_input, session=session, context=context, max_turns=50)
    gate.reach("invoke/end", turn=turn)


async def _drive(args: argparse.Namespace) -> int:
    module, factory = _module(args.app)
    if args.action == "read":  # neither the gate nor the ledger: a reading changes nothing
        return await read_session(module, Path(args.db), Path(args.out))
    case = ChildCase.open(args, module)
    scenario, gate, before_resume = case.scenario, case.gate, case.before_resume
    tools = [_tool(t, scenario, gate, case.ledger) for t in scenario.tools]
    inner = await _maybe(module.make_session(SESSION_ID, Path(args.db)))
    session = SessionProbe(inner, gate, args.fail)
    extra = {"session": session} if "session" in inspect.signature(factory).parameters else {}
    agent = factory(model=ScriptedModel(scenario, gate), tools=tools, **extra)
    if not isinstance(agent, Agent):
        refuse_other_framework(agent, args.app.rpartition(":")[2], "openai-agents")
        raise AppSpecError(f"{args.app} returned {type(agent).__name__}, not an Agent")
    make_context = getattr(module, "make_context", None)
    context = make_context() if callable(make_context) else None
    try:
        first = args.from_turn
        if args.action != "run":
            gate.note("app/resume", style=args.action, turn=first)
            if args.action == "hook" and before_resume is not None:
                await _maybe(before_resume(inner))  # the app's repair, on its own session
            stored = await inner.get_items()
            prompt = scenario.turns[first].user
            # resume: continue from the stored session with no new input;
            # resend: the user's message again.  Nothing stored: the message.
            resumed: str | list[TResponseInputItem] = prompt
            if args.action in ("resume", "hook") and stored:
                resumed = []
            await _run(agent, resumed, session, context, gate, first)
            first += 1
        for turn in range(first, len(scenario.turns)):
            gate.note("app/turn", turn=turn)
            await _run(agent, scenario.turns[turn].user, session, context, gate, turn)
    finally:
        await _close(inner)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = child_arguments("faultlab.lab.apps.oachild", argv, modes=MODES,
                           actions=("resume", "resend", "hook", "read"),
                           store="the session's database path")  # fmt: skip
    return run_child("openai-agents", args.app, lambda: asyncio.run(_drive(args)))


if __name__ == "__main__":
    sys.exit(main())
