# Reading a pydantic-ai app's stored history: the child's `read` action runs
# the app's own `load_history` and writes the lab's History; a loader that
# raises is written as the store's error (the lab's STORE_UNREADABLE), never
# as an empty history.
from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

pytest.importorskip("pydantic_ai")

from pydantic_ai.messages import (
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from faultlab.lab.apps.pachild import read_store
from faultlab.lab.read.histories import Call, History, Message

STORED = [
    ModelRequest(parts=[SystemPromptPart("be careful"), UserPromptPart("pay 40")]),
    ModelResponse(parts=[TextPart("Charging."),
                         ToolCallPart("charge_card", {"amount": 40}, tool_call_id="c1")]),
    ModelRequest(parts=[ToolReturnPart("charge_card", "declined", tool_call_id="c1",
                                       outcome="failed")]),
]  # fmt: skip


class _Store:
    """A module-like app store: its loader returns `messages` or raises."""

    def __init__(self, messages: list[Any] | None) -> None:
        self.messages = messages
        self.seen: list[Path] = []

    def load_history(self, path: Path) -> list[Any]:
        self.seen.append(path)
        if self.messages is None:
            raise ValueError("the app's format: bad magic")
        return self.messages


def test_the_apps_loader_reads_into_the_labs_history(tmp_path: Path) -> None:
    store = _Store(STORED)
    read_store(store, tmp_path / "store.db", tmp_path / "reading.json")  # type: ignore[arg-type]
    reading = orjson.loads((tmp_path / "reading.json").read_bytes())
    assert store.seen == [tmp_path / "store.db"]
    assert reading["count"] == 3
    assert History.from_json(reading["history"]) == History((
        Message("user", "pay 40"),
        Message("assistant", "Charging.", (Call("c1", "charge_card", {"amount": 40}),)),
        Message("tool", "declined", (), "c1", True),
    ))  # fmt: skip


def test_a_loader_that_raises_is_an_error_not_an_empty_history(tmp_path: Path) -> None:
    read_store(_Store(None), tmp_path / "store.db", tmp_path / "r.json")  # type: ignore[arg-type]
    reading = orjson.loads((tmp_path / "r.json").read_bytes())
    assert reading == {"error": "ValueError: the app's format: bad magic"}


@pytest.mark.realprocess
def test_the_lab_never_imports_pydantic_ai() -> None:
    # A fresh interpreter: this one has imported pydantic_ai above.
    code = ("import sys, faultlab.lab, faultlab.lab.apps, faultlab.lab.campaigns.appexplore, "
            "faultlab.cli; print(sorted(m for m in sys.modules if m.startswith('pydantic_ai')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=Path(__file__).resolve().parents[4])  # fmt: skip
    assert out.stdout.strip() == "[]"


def test_the_child_preloads_the_app_and_nothing_else() -> None:
    # The fork-server contract: preload imports the framework and the module.
    from faultlab.lab.apps import pachild

    pachild.preload("pydantic-ai:examples.pydantic_ai_refund:build_agent")
    assert "examples.pydantic_ai_refund" in sys.modules
    from faultlab.lab.apps.appspec import AppSpecError

    with pytest.raises(AppSpecError, match="load_history"):
        pachild.preload("faultlab.recipes.guidance:guidance")  # no history store
