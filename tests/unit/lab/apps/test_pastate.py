# The reader of a pydantic-ai app's stored history: a file written with
# pydantic-ai's own serializer reads into the lab's History; a missing file
# is an empty history and a torn one says it is damaged.
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pydantic_ai")

from pydantic_ai.messages import (
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from faultlab.lab.apps.pastate import read_history
from faultlab.lab.read.histories import Call, History, Message

STORED = [
    ModelRequest(parts=[SystemPromptPart("be careful"), UserPromptPart("pay 40")]),
    ModelResponse(parts=[TextPart("Charging."),
                         ToolCallPart("charge_card", {"amount": 40}, tool_call_id="c1")]),
    ModelRequest(parts=[ToolReturnPart("charge_card", "declined", tool_call_id="c1",
                                       outcome="failed")]),
]  # fmt: skip


def test_a_stored_history_reads_as_the_labs_history(tmp_path: Path) -> None:
    path = tmp_path / "history.json"
    path.write_bytes(ModelMessagesTypeAdapter.dump_json(STORED))
    thread = read_history(path)
    assert thread.history == History((
        Message("user", "pay 40"),
        Message("assistant", "Charging.", (Call("c1", "charge_card", {"amount": 40}),)),
        Message("tool", "declined", (), "c1", True),
    ))  # fmt: skip
    assert thread.pending == ()


def test_no_file_and_a_torn_file(tmp_path: Path) -> None:
    assert read_history(tmp_path / "none.json").history.messages == ()
    torn = tmp_path / "torn.json"
    torn.write_bytes(ModelMessagesTypeAdapter.dump_json(STORED)[:40])
    thread = read_history(torn)
    assert thread.history.messages == () and thread.pending[0][0] == "damaged"


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
    with pytest.raises(SystemExit, match="load_history"):
        pachild.preload("faultlab.recipes.guidance:guidance")  # no history store
