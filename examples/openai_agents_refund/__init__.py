# A small OpenAI Agents SDK app to copy: an Agent with the tools it is
# given, run by `Runner.run` and persisted by the SDK's own `SQLiteSession`
# (one SQLite database).  faultlab crash-tests it with `faultlab explore
# --app openai-agents:examples.openai_agents_refund:build_agent
# scenarios/payment.toml`.
from __future__ import annotations

from pathlib import Path
from typing import Any

from agents import Agent, SQLiteSession

__all__ = ["build_agent", "make_session"]


def build_agent(*, model: Any, tools: list[Any]) -> Agent[Any]:
    """The app's agent: the model answers, its tool calls run, repeat."""
    return Agent(name="refunds", instructions="You handle refunds and charges.", model=model,
                 tools=tools)  # fmt: skip


def make_session(session_id: str, path: Path) -> SQLiteSession:
    """The app's session store: the SDK's SQLite session in one file."""
    return SQLiteSession(session_id, path)
