# The OpenAI Agents SDK repair.  What the SDK leaves after a crash (0.24,
# measured: docs/frameworks.md): a `Session` receives a step's items only
# once the step is done, the model's function calls together with their
# outputs, so a process killed inside a tool body leaves no trace of the
# call, and the app's next run asks the model again and runs the tool again
# (a second charge).  No repair of the stored items can help there: the
# evidence is never written.  So the recipe has two parts:
#
# - write-ahead: `WriteAheadHooks` (agent hooks) write the model's response
#   to the session as soon as it is made (`on_llm_end`), before any of its
#   calls is dispatched; `WriteAheadSession` (around the app's session)
#   drops the items already stored when the SDK saves the step, so nothing
#   is stored twice;
# - repair: `repair_dangling_calls(session)` answers every stored call with
#   no output.  A written-ahead call may have run (its body may have
#   started): TOOL_OUTCOME_UNKNOWN, with the guidance not to retry blindly.
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from agents import AgentHooks
from agents.items import ModelResponse, TResponseInputItem
from agents.memory import SessionABC
from agents.run_context import RunContextWrapper

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
    "WriteAheadHooks",
    "WriteAheadSession",
    "repair_dangling_calls",
]


def _field(item: Any, key: str) -> Any:
    return item.get(key) if isinstance(item, dict) else getattr(item, key, None)


def _identity(item: Any) -> tuple[str, str] | None:
    """What makes a stored item the same item when saved again: a call or
    an output by its call id, a message by its id; None: always new."""
    kind = _field(item, "type")
    if kind in ("function_call", "function_call_output") and _field(item, "call_id"):
        return str(kind), str(_field(item, "call_id"))
    if _field(item, "id"):
        return "id", str(_field(item, "id"))
    return None


class WriteAheadSession(SessionABC):
    """The app's session, with writes that skip items it already holds
    (written ahead by `WriteAheadHooks`, then saved by the SDK with the step)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.session_id = inner.session_id
        self.session_settings = getattr(inner, "session_settings", None)

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        return list(await self.inner.get_items(limit))

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        stored = {_identity(i) for i in await self.inner.get_items()} - {None}
        new = [i for i in items if _identity(i) is None or _identity(i) not in stored]
        if new:
            await self.inner.add_items(new)

    async def pop_item(self) -> TResponseInputItem | None:
        return await self.inner.pop_item()  # type: ignore[no-any-return]

    async def clear_session(self) -> None:
        await self.inner.clear_session()


class WriteAheadHooks(AgentHooks[Any]):
    """Agent hooks that store a model response that calls tools before the
    SDK dispatches them, through `session` (a `WriteAheadSession`, or what
    wraps one)."""

    def __init__(self, session: Any) -> None:
        self.session = session

    async def on_llm_end(self, context: RunContextWrapper[Any], agent: Any,
                         response: ModelResponse) -> None:  # fmt: skip
        items = response.to_input_items()
        if any(_field(i, "type") == "function_call" for i in items):
            await self.session.add_items(items)


async def repair_dangling_calls(session: Any, *,
                                safe_tools: Iterable[str] = ()) -> list[RepairedCall]:  # fmt: skip
    """Answer every stored function call with no output with a
    TOOL_OUTCOME_UNKNOWN output carrying the guidance; returns what was
    answered (nothing on a consistent session: call it on every start).
    `safe_tools` are the read-only or idempotent tools whose retry the
    guidance may allow."""
    items = await session.get_items()
    answered = {_field(i, "call_id") for i in items if _field(i, "type") == "function_call_output"}
    safe = set(safe_tools)
    repaired: list[RepairedCall] = []
    answers: list[Any] = []
    for item in items:
        if _field(item, "type") != "function_call" or _field(item, "call_id") in answered:
            continue
        call, name = str(_field(item, "call_id")), str(_field(item, "name"))
        repaired.append(RepairedCall(call, name, TOOL_OUTCOME_UNKNOWN))
        text = guidance(TOOL_OUTCOME_UNKNOWN, name, call, safe_to_retry=name in safe)
        answers.append({"type": "function_call_output", "call_id": call, "output": text})
    if answers:
        await session.add_items(answers)
    return repaired
