# The Google ADK repair.  What ADK leaves after a crash (2.13, measured:
# docs/frameworks.md): the Runner stores the model's response, its function
# calls included, through the SessionService's `append_event` before it
# runs any of them, and stores their responses only once they have all
# returned.  A process killed in between leaves calls with no response.
# ADK's next run on the session leaves such calls out of what it sends the
# model and keeps them stored: the model never learns that a charge may
# have gone through (and a response that was only calls asks for them
# again), and the stored session breaks the pairing rules model APIs
# enforce.  `repair_dangling_calls` answers each such call exactly once,
# with the event ADK itself would have stored (a function response in a
# `user` content, authored by the agent that called), before the app runs
# the session again.  Class: ADK stores the calls before it dispatches them
# and nothing of a body's start, so a stored call with no response may have
# run: TOOL_OUTCOME_UNKNOWN (with the guidance for the model).
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from google.adk.events import Event
from google.adk.sessions import BaseSessionService
from google.genai import types

from faultlab.recipes.guidance import (
    TOOL_NOT_STARTED,
    TOOL_OUTCOME_UNKNOWN,
    RepairedCall,
    guidance,
)

__all__ = ["TOOL_NOT_STARTED", "TOOL_OUTCOME_UNKNOWN", "RepairedCall", "repair_dangling_calls"]


async def repair_dangling_calls(
    service: BaseSessionService, *, app_name: str, user_id: str, session_id: str,
    safe_tools: Iterable[str] = (), code: str = TOOL_OUTCOME_UNKNOWN,
) -> list[RepairedCall]:  # fmt: skip
    """Answer every stored function call of the session that has no
    response, once, with `code` (TOOL_OUTCOME_UNKNOWN) and its guidance;
    returns what was answered (nothing on a consistent session, or when the
    session does not exist yet: call it on every start).  `safe_tools` are
    the read-only or idempotent tools whose retry the guidance may allow."""
    session = await service.get_session(app_name=app_name, user_id=user_id,
                                        session_id=session_id)  # fmt: skip
    if session is None:
        return []
    answered = {r.id for e in session.events for r in e.get_function_responses() if r.id}
    safe = set(safe_tools)
    repaired: list[RepairedCall] = []
    for event in list(session.events):
        parts: list[types.Part] = []
        for call in event.get_function_calls():
            if not call.id or call.id in answered:
                continue
            answered.add(call.id)
            name = str(call.name)
            repaired.append(RepairedCall(call.id, name, code))
            text = guidance(code, name, call.id, safe_to_retry=name in safe)
            response: dict[str, Any] = {"error": text, "code": code}
            parts.append(types.Part(function_response=types.FunctionResponse(
                id=call.id, name=name, response=response)))  # fmt: skip
        if parts:  # one answer per calling event, as ADK stores a step's responses
            await service.append_event(session, Event(
                invocation_id=event.invocation_id, author=event.author, branch=event.branch,
                content=types.Content(role="user", parts=parts)))  # fmt: skip
    return repaired
