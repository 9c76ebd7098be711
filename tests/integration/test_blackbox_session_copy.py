# The bundled Agents SDK app's session at the kill, as the report keeps it:
# its SQLiteSession runs in WAL mode, so the copy holds the database with
# its -wal beside it, and reads the conversation the app had (before issue
# 33 the copy was the database file alone and read as nothing).  Skipped,
# with the command that installs it, where openai-agents is not installed.
from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from faultlab import lab
from faultlab.lab.agents import find_adapter, installed
from faultlab.lab.process.tree import leftovers

PAYMENT = str(Path(__file__).resolve().parents[2] / "scenarios" / "payment.toml")
pytestmark = pytest.mark.realprocess


def test_the_agents_sdk_session_copy_at_the_kill_is_not_empty(tmp_path: Path) -> None:
    if installed(find_adapter("openai-agents")) is None:
        pytest.skip("openai-agents is not installed (faultlab agents install openai-agents)")
    # Parked at its second model request: the app has the call and its result.
    result = lab.run_agent_case(PAYMENT, "model/request#2@0", agent="openai-agents",
                                workdir=tmp_path, timeout=180)  # fmt: skip
    assert result.verdict == "pass", [v.message for v in result.violations]
    wal = Path(result.artifacts["at-kill:session.sqlite3-wal"])
    assert wal.name == "at-kill-0-session.sqlite3-wal" and wal.is_file()
    history = orjson.loads(Path(result.artifacts["at-kill:session.sqlite3:history"]).read_bytes())
    assert [m["role"] for m in history] == ["user", "assistant", "tool"]
    assert history[1]["calls"][0]["name"] == "charge_card"
    assert leftovers(str(tmp_path)) == []
