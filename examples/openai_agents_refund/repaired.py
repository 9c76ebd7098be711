# The same app with faultlab's OpenAI Agents SDK recipe installed
# (faultlab/recipes/openai_agents.py): the model's response is written to
# the session before its calls run, and before the app resumes a session
# its unanswered calls are answered TOOL_OUTCOME_UNKNOWN.  faultlab calls
# `before_resume` in its `hook` resume style; an app calls it on every start.
from __future__ import annotations

from pathlib import Path
from typing import Any

from agents import Agent, SQLiteSession

from faultlab.recipes.openai_agents import (
    WriteAheadHooks,
    WriteAheadSession,
    repair_dangling_calls,
)

__all__ = ["before_resume", "build_agent", "make_session"]


def build_agent(*, model: Any, tools: list[Any], session: Any) -> Agent[Any]:
    """The app's agent, its hooks writing each response ahead to `session`."""
    return Agent(name="refunds", instructions="You handle refunds and charges.", model=model,
                 tools=tools, hooks=WriteAheadHooks(session))  # fmt: skip


def make_session(session_id: str, path: Path) -> WriteAheadSession:
    return WriteAheadSession(SQLiteSession(session_id, path))


async def before_resume(session: WriteAheadSession) -> None:
    await repair_dangling_calls(session)
