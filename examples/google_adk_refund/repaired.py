# The same app with faultlab's Google ADK recipe installed
# (faultlab/recipes/google_adk.py): the agent marks each tool call started
# before its body runs (`mark_started`, a before_tool_callback), and before
# the app runs a session again every function call stored without a
# response is answered once: TOOL_OUTCOME_UNKNOWN when it was marked
# started (the charge may have gone through), TOOL_NOT_STARTED when not.
# faultlab calls `before_resume` in its `hook` resume style; an app calls it
# on every start, before `Runner.run_async`.
from __future__ import annotations

from typing import Any

from google.adk.agents import Agent
from google.adk.sessions import BaseSessionService

from examples.google_adk_refund import make_session_service
from faultlab.recipes.google_adk import mark_started, repair_dangling_calls

__all__ = ["before_resume", "build_agent", "make_session_service"]


def build_agent(*, model: Any, tools: list[Any]) -> Agent:
    """The example's agent, marking each call started before it runs."""
    return Agent(name="refunds", instruction="You handle refunds and charges.", model=model,
                 tools=tools, before_tool_callback=mark_started)  # fmt: skip


async def before_resume(service: BaseSessionService, *, app_name: str, user_id: str,
                        session_id: str) -> None:  # fmt: skip
    await repair_dangling_calls(service, app_name=app_name, user_id=user_id,
                                session_id=session_id, marked=True)  # fmt: skip
