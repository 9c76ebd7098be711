# The OpenAI Agents SDK's items as the lab's History (oastate), and the
# child's contract: the lab never imports the SDK, and `preload` imports the
# framework and the user's module only (refusing a module with no Session).
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from faultlab.lab.apps.oastate import to_history
from faultlab.lab.read.histories import Call, History, Message


def test_a_response_stored_as_several_items_is_one_assistant_message() -> None:
    items = [
        {"role": "system", "content": "be careful"},
        {"role": "user", "content": [{"type": "input_text", "text": "pay 40"}]},
        {"type": "message", "role": "assistant",
         "content": [{"type": "output_text", "text": "Charging."}]},
        {"type": "function_call", "call_id": "c1", "name": "charge_card", "arguments": "{}"},
        {"type": "function_call", "call_id": "c2", "name": "lookup", "arguments": "not json"},
        {"type": "function_call_output", "call_id": "c1", "output": "charged"},
        {"type": "reasoning", "summary": []},
        {"type": "function_call", "call_id": "c3", "name": "lookup", "arguments": "{}"},
    ]  # fmt: skip
    assert to_history(items) == History((
        Message("user", "pay 40"),
        Message("assistant", "Charging.", (Call("c1", "charge_card", {}),
                                           Call("c2", "lookup", {"_raw": "not json"}))),
        Message("tool", "charged", (), "c1"),
        Message("assistant", "", (Call("c3", "lookup", {}),)),
    ))  # fmt: skip


@pytest.mark.realprocess
def test_the_lab_never_imports_the_agents_sdk() -> None:
    code = ("import sys, faultlab.lab, faultlab.lab.apps, faultlab.cli; "
            "print(sorted(m for m in sys.modules if m == 'agents' or m.startswith('agents.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=Path(__file__).resolve().parents[4])  # fmt: skip
    assert out.stdout.strip() == "[]"


def test_the_child_preloads_the_app_and_nothing_else() -> None:
    pytest.importorskip("agents")
    from faultlab.lab.apps import oachild

    oachild.preload("openai-agents:examples.openai_agents_refund:build_agent")
    assert "examples.openai_agents_refund" in sys.modules
    from faultlab.lab.apps.appspec import AppSpecError

    with pytest.raises(AppSpecError, match="make_session"):
        oachild.preload("faultlab.recipes.guidance:guidance")  # no session
