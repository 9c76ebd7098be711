# A small Google ADK app to copy: an Agent with the tools it is given, run
# by ADK's Runner and persisted by ADK's own `DatabaseSessionService` on
# SQLite (one database file).  faultlab crash-tests it with `faultlab
# explore --app google-adk:examples.google_adk_refund:build_agent
# scenarios/payment.toml`.
from __future__ import annotations

from pathlib import Path
from typing import Any

from google.adk.agents import Agent
from google.adk.sessions import DatabaseSessionService

__all__ = ["build_agent", "make_session_service"]


def build_agent(*, model: Any, tools: list[Any]) -> Agent:
    """The app's agent: the model answers, its tool calls run, repeat."""
    return Agent(name="refunds", instruction="You handle refunds and charges.", model=model,
                 tools=tools)  # fmt: skip


def make_session_service(path: Path) -> DatabaseSessionService:
    """The app's session store: ADK's database service on SQLite, in one file."""
    return DatabaseSessionService(db_url=f"sqlite+aiosqlite:///{path}")
