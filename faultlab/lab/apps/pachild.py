# The child side of a pydantic-ai app case (`python -m faultlab.lab.apps.pachild`):
# it imports the user's module, builds its Agent from a scripted
# FunctionModel and the scenario's tools, and drives the agent through the
# case's turns over the app's own history store (the module's
# `load_history` / `save_history`, behind a reporting proxy).  The history
# is saved after every node of `agent.iter()` whose messages changed (save
# policy `node`) or once after the run (`run`).  Every boundary is reported
# to the lab's gate (GateClient); the lab SIGKILLs this process at the
# armed one.  This module imports pydantic_ai at import time, so only the
# child ever loads it.  The entry points follow the app children's contract:
# `preload(app)` imports the framework and the user's module and nothing
# else, `main(argv)` runs one child, so a fork server can preload once.
from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from pydantic_ai import ModelRetry, RunContext, Tool, ToolFailed
from pydantic_ai.exceptions import ModelHTTPError
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelResponse,
    ModelResponsePart,
    TextPart,
    ToolCallPart,
    repair_messages,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from faultlab.lab.apps.appspec import AppSpecError, import_app, refuse_other_framework, run_child
from faultlab.lab.apps.pastate import to_history
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

__all__ = ["SAVE_POLICIES", "HistoryProbe", "main", "preload", "scripted_model"]

SAVE_POLICIES = ("node", "run")
MODEL_NAME = "faultlab-scripted"


def scripted_model(scenario: Scenario, gate: GateClient) -> FunctionModel:
    """A FunctionModel that answers by position in the history it is sent
    (faultlab/lab/apps/script.py) and rejects, as a model API does with a
    400, a history with a tool call unanswered before the next message."""

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        history = to_history(messages)
        problem = request_problem(gate, history)
        if problem:
            raise ModelHTTPError(400, MODEL_NAME, {"error": problem})
        turn, step, spec = scripted_step(scenario, history)
        parts: list[ModelResponsePart] = []
        if spec is None:
            parts.append(TextPart("Done."))
        else:
            if spec.text:
                parts.append(TextPart(spec.text))
            parts += [ToolCallPart(c.tool, dict(c.arguments), tool_call_id=call_id(turn, step, i))
                      for i, c in enumerate(spec.tool_calls)]  # fmt: skip
        calls = [p.tool_call_id for p in parts if isinstance(p, ToolCallPart)]
        gate.reach("model/answered", calls=calls)
        return ModelResponse(parts=parts, model_name=MODEL_NAME)

    return FunctionModel(answer, model_name=MODEL_NAME)


def _tool(spec: ToolSpec, scenario: Scenario, gate: GateClient, ledger: LedgerWriter) -> Tool[Any]:
    names = argument_names(spec, scenario)
    schema = {"type": "object", "properties": {name: {} for name in names}}

    async def body(ctx: RunContext[Any], **arguments: Any) -> str:
        # Blocking on the gate blocks the event loop: the process stands
        # still at the boundary while the lab decides.
        failed, text = run_tool_body(spec, gate, ledger, str(ctx.tool_call_id), arguments)
        if failed and spec.asks_retry(arguments):
            raise ModelRetry(text)  # pydantic-ai's retry: a RetryPromptPart, the model asked again
        if failed:
            raise ToolFailed(text)
        return text

    return Tool.from_schema(body, spec.name, f"the scenario's {spec.name} tool", schema,
                            takes_ctx=True)  # fmt: skip


class HistoryProbe:
    """Wraps the app's store: reports each save started and completed (with
    the tool calls the saved messages ask and answer) and fails the armed
    one with EIO before the app's own save runs."""

    def __init__(self, module: ModuleType, path: Path, gate: GateClient,
                 fail: str | None) -> None:  # fmt: skip
        self._load: Callable[[Path], Sequence[ModelMessage]] = module.load_history
        self._save: Callable[[Path, Sequence[ModelMessage]], None] = module.save_history
        self.path = path
        self.writes = StoreWrites(gate, fail)
        self._last = b""

    def load(self) -> list[ModelMessage]:
        messages = list(self._load(self.path))
        self._last = ModelMessagesTypeAdapter.dump_json(messages)
        return messages

    def save(self, messages: Sequence[ModelMessage], *, changed_only: bool = True) -> None:
        raw = ModelMessagesTypeAdapter.dump_json(list(messages))
        if changed_only and raw == self._last:
            return
        detail = self.writes.before(to_history(messages), len(messages))
        self._save(self.path, messages)
        self._last = raw
        self.writes.after(detail)


async def _turn(agent: Any, store: HistoryProbe, prompt: str | None,
                history: list[ModelMessage], policy: str, deps: Any) -> None:  # fmt: skip
    """One agent run over `history` with the app's `deps`, saved by the policy."""
    async with agent.iter(prompt, message_history=history, deps=deps) as run:
        async for _node in run:
            if policy == "node":  # the messages of the node that just finished
                store.save(run.all_messages())
    store.save(run.all_messages())


def _module(app: str) -> tuple[ModuleType, Callable[..., Any]]:
    module, factory = import_app(app, "pydantic-ai")
    for needed in ("load_history", "save_history"):
        if not callable(getattr(module, needed, None)):
            raise AppSpecError(f"{module.__name__} defines no {needed}(path, ...): a "
                               "pydantic-ai app provides its own history store")  # fmt: skip
    return module, factory


def _deps(module: ModuleType) -> Any:
    """The app's dependencies for a run: the module's `make_deps()` (called
    once per process, as an app builds them at start), or None."""
    make_deps = getattr(module, "make_deps", None)
    return make_deps() if callable(make_deps) else None


def read_store(module: ModuleType, store: Path, out: Path) -> int:
    """The `read` action: the history the app's own `load_history` finds at
    `store` (a copy of the case's store), written to `out` as the lab's
    History; an app loader that raises is written as the store's error, so
    the lab says STORE_UNREADABLE instead of reading it as empty."""
    try:
        messages = list(module.load_history(store))
        answer = reading(len(messages), to_history(messages))
    except Exception as error:  # whatever the app's loader raises is the verdict's evidence
        answer = reading_error(error)
    out.write_bytes(answer)
    return 0


def preload(app: str) -> None:
    """Import the framework (done by importing this module) and the user's
    module, and nothing else.  `app` is `MODULE:FACTORY`, as `main` takes
    it, or the whole `pydantic-ai:MODULE:FACTORY`."""
    _module(app.removeprefix("pydantic-ai:"))


async def _drive(args: argparse.Namespace) -> int:
    module, factory = _module(args.app)
    if args.action == "read":  # neither the gate nor the ledger: a reading changes nothing
        return read_store(module, Path(args.db), Path(args.out))
    case = ChildCase.open(args, module)
    scenario, gate, before_resume = case.scenario, case.gate, case.before_resume
    tools = [_tool(t, scenario, gate, case.ledger) for t in scenario.tools]
    agent = factory(model=scripted_model(scenario, gate), tools=tools)
    refuse_other_framework(agent, args.app.rpartition(":")[2], "pydantic-ai")
    store = HistoryProbe(module, Path(args.db), gate, args.fail)
    deps = _deps(module)
    first = args.from_turn
    if args.action != "run":
        gate.note("app/resume", style=args.action, turn=first)
        history = store.load()
        prompt: str | None = scenario.turns[first].user
        if args.action == "repair":  # pydantic-ai's own repair, then the message again
            history = repair_messages(history)
        elif args.action == "hook" and before_resume is not None:
            history = list(before_resume(history))
        if args.action in ("resume", "hook") and history:
            prompt = None  # continue the run from the stored history
        await _turn(agent, store, prompt, history, args.durability, deps)
        gate.reach("invoke/end", turn=first)
        first += 1
    for turn in range(first, len(scenario.turns)):
        gate.note("app/turn", turn=turn)
        await _turn(agent, store, scenario.turns[turn].user, store.load(), args.durability,
                    deps)  # fmt: skip
        gate.reach("invoke/end", turn=turn)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = child_arguments("faultlab.lab.apps.pachild", argv, modes=SAVE_POLICIES,
                           actions=("resume", "resend", "hook", "repair", "read"),
                           store="the history store's path")  # fmt: skip
    return run_child("pydantic-ai", args.app, lambda: asyncio.run(_drive(args)))


if __name__ == "__main__":
    sys.exit(main())
