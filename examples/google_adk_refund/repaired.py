# The same app with faultlab's Google ADK recipe installed
# (faultlab/recipes/google_adk.py): before the app runs a session again,
# every function call stored without a response is answered once,
# TOOL_OUTCOME_UNKNOWN, so the model is told the charge may have gone
# through.  faultlab calls `before_resume` in its `hook` resume style; an
# app calls it on every start, before `Runner.run_async`.
from __future__ import annotations

from google.adk.sessions import BaseSessionService

from examples.google_adk_refund import build_agent, make_session_service
from faultlab.recipes.google_adk import repair_dangling_calls

__all__ = ["before_resume", "build_agent", "make_session_service"]


async def before_resume(service: BaseSessionService, *, app_name: str, user_id: str,
                        session_id: str) -> None:  # fmt: skip
    await repair_dangling_calls(service, app_name=app_name, user_id=user_id,
                                session_id=session_id)  # fmt: skip
