# faultlab.recipes.openai_agents in-process on the SDK's own SQLiteSession
# (a real file, no mock): the session wrapper stores an item once though
# the write-ahead and the SDK's step save both write it; the repair answers
# exactly the stored calls without an output, as unknown, and leaves a
# consistent session alone; the items read back as the lab's History with
# every call answered once (oastate.to_history, the reader the lab uses).
from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents")

from agents import SQLiteSession

from faultlab.lab.apps.oastate import to_history
from faultlab.lab.read.histories import Call, History, Message, classify_result, pairing_problems
from faultlab.recipes.openai_agents import (
    TOOL_OUTCOME_UNKNOWN,
    WriteAheadSession,
    repair_dangling_calls,
)

USER = {"role": "user", "content": "pay 40"}
SAID = {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
        "content": [{"type": "output_text", "text": "Charging.", "annotations": []}]}  # fmt: skip
CALL = {"type": "function_call", "call_id": "c1", "name": "charge_card",
        "arguments": '{"amount": 40}'}  # fmt: skip
OUTPUT = {"type": "function_call_output", "call_id": "c1", "output": "charged"}


def _session(tmp_path: Path) -> WriteAheadSession:
    return WriteAheadSession(SQLiteSession("s", tmp_path / "session.sqlite"))


def _run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


def test_an_item_written_ahead_is_stored_once(tmp_path: Path) -> None:
    session = _session(tmp_path)

    async def steps() -> list[Any]:
        await session.add_items([USER])
        await session.add_items([SAID, CALL])  # the write-ahead (on_llm_end)
        await session.add_items([SAID, CALL, OUTPUT])  # the SDK's save of the step
        return await session.get_items()

    items = _run(steps())
    assert [i.get("type", "message") for i in items] == [
        "message", "message", "function_call", "function_call_output"]  # fmt: skip
    assert to_history(items) == History((
        Message("user", "pay 40"),
        Message("assistant", "Charging.", (Call("c1", "charge_card", {"amount": 40}),)),
        Message("tool", "charged", (), "c1"),
    ))  # fmt: skip


def test_the_repair_answers_a_dangling_call_as_unknown_once(tmp_path: Path) -> None:
    session = _session(tmp_path)

    async def crash_then_repair() -> tuple[list[Any], list[Any], list[Any]]:
        await session.add_items([USER, SAID, CALL])  # killed in the body
        first = await repair_dangling_calls(session)
        second = await repair_dangling_calls(session)  # a consistent session
        return first, second, await session.get_items()

    first, second, items = _run(crash_then_repair())
    assert [(r.call_id, r.code) for r in first] == [("c1", TOOL_OUTCOME_UNKNOWN)]
    assert second == []
    history = to_history(items)
    assert pairing_problems(history) == []
    assert classify_result(history.messages[-1]) == "unknown"


def test_a_safe_tool_may_be_retried(tmp_path: Path) -> None:
    session = _session(tmp_path)

    async def repaired() -> list[Any]:
        await session.add_items([USER, SAID, CALL])
        await repair_dangling_calls(session, safe_tools=["charge_card"])
        return await session.get_items()

    assert "calling it again is safe" in _run(repaired())[-1]["output"]
