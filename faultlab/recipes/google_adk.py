# The Google ADK repair.  What ADK leaves after a crash (2.13, measured:
# docs/frameworks.md): the Runner stores the model's response, its function
# calls included, through the SessionService's `append_event` before it
# runs any of them, and stores their responses only once they have all
# returned.  A process killed in between leaves calls with no response.
# ADK's next run on the session leaves such calls out of what it sends the
# model and keeps them stored: the model never learns that a charge may
# have gone through (and a response that was only calls asks for them
# again), and the stored session breaks the pairing rules model APIs
# enforce.  Two parts:
#
# - `mark_started` (the agent's `before_tool_callback`) stores, before a
#   tool's body runs, that the call is starting: one small event with no
#   content (ADK leaves it out of what the model is sent);
# - `repair_dangling_calls` answers each call with no response exactly
#   once, with the event ADK itself would have stored (a function response
#   in a `user` content, authored by the agent that called), before the app
#   runs the session again: TOOL_OUTCOME_UNKNOWN when the call was marked
#   started (its body may have run), TOOL_NOT_STARTED when it was not (the
#   process stopped before dispatching it).  Without `mark_started` every
#   such call is answered TOOL_OUTCOME_UNKNOWN: ADK stores nothing of a
#   body's start, so any stored call may have run.
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from google.adk.events import Event
from google.adk.sessions import BaseSessionService
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.tool_context import ToolContext
from google.genai import types

from faultlab.recipes.guidance import (
    TOOL_NOT_STARTED,
    TOOL_OUTCOME_UNKNOWN,
    RepairedCall,
    guidance,
)

__all__ = [
    "STARTED", "TOOL_NOT_STARTED", "TOOL_OUTCOME_UNKNOWN", "RepairedCall", "mark_started",
    "repair_dangling_calls",
]  # fmt: skip

# The custom_metadata key of a started call's mark.
STARTED = "faultlab_started_call"


async def mark_started(tool: BaseTool, args: dict[str, Any],
                       tool_context: ToolContext) -> None:  # fmt: skip
    """A `before_tool_callback`: store that the call is starting, before its
    body runs (an event with no content; returns None, so the tool runs)."""
    context = tool_context.get_invocation_context()
    await context.session_service.append_event(tool_context.session, Event(
        invocation_id=context.invocation_id, author=tool_context.event_author,
        branch=tool_context.branch,
        custom_metadata={STARTED: tool_context.function_call_id}))  # fmt: skip


async def repair_dangling_calls(
    service: BaseSessionService, *, app_name: str, user_id: str, session_id: str,
    safe_tools: Iterable[str] = (), marked: bool = False, code: str | None = None,
) -> list[RepairedCall]:  # fmt: skip
    """Answer every stored function call of the session that has no
    response, once, with its class and its guidance: with `marked` (the
    agent runs `mark_started` before every tool), TOOL_OUTCOME_UNKNOWN for a
    call marked started and TOOL_NOT_STARTED for one that was not; without,
    TOOL_OUTCOME_UNKNOWN for every call (`code` forces one); returns what was
    answered (nothing on a consistent session, or when the session does not
    exist yet: call it on every start).  `safe_tools` are the read-only or
    idempotent tools whose retry the guidance may allow."""
    session = await service.get_session(app_name=app_name, user_id=user_id,
                                        session_id=session_id)  # fmt: skip
    if session is None:
        return []
    answered = {r.id for e in session.events for r in e.get_function_responses() if r.id}
    marks = [e.custom_metadata.get(STARTED) for e in session.events if e.custom_metadata]
    started = {m for m in marks if isinstance(m, str)}
    safe = set(safe_tools)
    repaired: list[RepairedCall] = []
    for event in list(session.events):
        parts: list[types.Part] = []
        for call in event.get_function_calls():
            if not call.id or call.id in answered:
                continue
            answered.add(call.id)
            name = str(call.name)
            known = TOOL_NOT_STARTED if marked and call.id not in started else TOOL_OUTCOME_UNKNOWN
            said = code or known
            repaired.append(RepairedCall(call.id, name, said))
            text = guidance(said, name, call.id, safe_to_retry=name in safe)
            response: dict[str, Any] = {"error": text, "code": said}
            parts.append(types.Part(function_response=types.FunctionResponse(
                id=call.id, name=name, response=response)))  # fmt: skip
        if parts:  # one answer per calling event, as ADK stores a step's responses
            await service.append_event(session, Event(
                invocation_id=event.invocation_id, author=event.author, branch=event.branch,
                content=types.Content(role="user", parts=parts)))  # fmt: skip
    return repaired
