# faultlab.recipes.google_adk in-process on ADK's own DatabaseSessionService
# on a SQLite file (real, no mock): the repair answers exactly the stored
# calls without a response, once, unknown when marked started and not
# started otherwise, leaves a consistent session and a missing one alone, and
# the session then reads back, through the lab's own reader of ADK's
# tables, as a history a model API accepts.
from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

pytest.importorskip("google.adk")
pytest.importorskip("sqlalchemy")

from google.adk.events import Event
from google.adk.sessions import DatabaseSessionService
from google.genai import types

from faultlab.lab.apps.adkstate import read_database_session
from faultlab.lab.read.histories import classify_result, pairing_problems
from faultlab.recipes.google_adk import (
    STARTED,
    TOOL_NOT_STARTED,
    TOOL_OUTCOME_UNKNOWN,
    repair_dangling_calls,
)

WHO = {"app_name": "shop", "user_id": "u", "session_id": "s"}


def _call(call_id: str, name: str) -> types.Part:
    return types.Part(function_call=types.FunctionCall(id=call_id, name=name, args={}))


async def _scenario(path: Path) -> list[list[str]]:
    service = DatabaseSessionService(db_url=f"sqlite+aiosqlite:///{path}")
    try:
        assert await repair_dangling_calls(service, **WHO) == []  # no session yet
        session = await service.create_session(**WHO)
        await service.append_event(session, Event(author="user", invocation_id="i1",
                                                  content=types.Content(role="user",
                                                  parts=[types.Part(text="pay 40")])))  # fmt: skip
        asked = types.Content(role="model", parts=[types.Part(text="Charging."),
                              _call("c1", "charge_card"), _call("c2", "lookup"),
                              _call("c3", "charge_card")])  # fmt: skip
        await service.append_event(session, Event(author="shop", invocation_id="i1",
                                                  content=asked))  # fmt: skip
        answered = types.Part(function_response=types.FunctionResponse(
            id="c2", name="lookup", response={"result": "found"}))  # fmt: skip
        reply = types.Content(role="user", parts=[answered])
        await service.append_event(session, Event(author="shop", invocation_id="i1",
                                                  content=reply))  # fmt: skip
        # The recipe's mark (mark_started): c1's body had started; c3,
        # asked in the same response, never had.
        await service.append_event(session, Event(author="shop", invocation_id="i1",
                                                  custom_metadata={STARTED: "c1"}))  # fmt: skip
        first = await repair_dangling_calls(service, **WHO, safe_tools=("lookup",), marked=True)
        again = await repair_dangling_calls(service, **WHO)  # idempotent
        return [[c.call_id, c.name, c.code] for c in first] + [[str(len(again))]]
    finally:
        await service.close()


def test_the_repair_answers_each_dangling_call_once(tmp_path: Path) -> None:
    path = tmp_path / "sessions.sqlite"
    assert asyncio.run(_scenario(path)) == [["c1", "charge_card", TOOL_OUTCOME_UNKNOWN],
                                            ["c3", "charge_card", TOOL_NOT_STARTED], ["0"]]
    stored = read_database_session(path, user_id="u", session_id="s", limit=1 << 20)
    assert stored is not None and stored.count == 5  # the mark is stored, and is no message
    history = stored.history
    assert pairing_problems(history) == []
    assert classify_result(history.results()["c1"]) == "unknown"
    assert classify_result(history.results()["c3"]) == "not-started"
    assert "Do not retry it blindly" in history.results()["c1"].text
