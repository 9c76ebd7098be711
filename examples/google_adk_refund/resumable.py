# The example built as a resumable ADK `App`
# (`resumability_config=ResumabilityConfig(is_resumable=True)`): ADK can then
# resume an interrupted invocation by its id (`Runner.run_async(...,
# invocation_id=...)`, no new message), faultlab's `invocation` resume style.
from __future__ import annotations

from typing import Any

from google.adk.apps import App, ResumabilityConfig

from examples.google_adk_refund import build_agent, make_session_service

__all__ = ["build_app", "make_session_service"]


def build_app(*, model: Any, tools: list[Any]) -> App:
    """The example's agent in an App whose invocations ADK resumes."""
    return App(name="refunds", root_agent=build_agent(model=model, tools=tools),
               resumability_config=ResumabilityConfig(is_resumable=True))  # fmt: skip
