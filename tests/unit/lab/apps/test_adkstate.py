# Google ADK contents and stored sessions as the lab's History (adkstate),
# read without ADK: the contents an LlmRequest sends and a session's events
# carry, and the events table of ADK's DatabaseSessionService read from
# SQLite by the lab (the table built here as ADK 2.13 creates it; the
# integration tests read databases ADK itself wrote).
from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from faultlab.lab.apps.adkstate import read_database_session, to_history
from faultlab.lab.read.histories import Call, History, Message

USER = {"role": "user", "parts": [{"text": "pay 40"}]}
ASK = {"role": "model", "parts": [
    {"text": "thinking...", "thought": True}, {"text": "Charging."},
    {"function_call": {"id": "c1", "name": "charge_card", "args": {"amount": 40}}},
    {"function_call": {"id": "c2", "name": "lookup"}},
]}  # fmt: skip
ANSWERS = {"role": "user", "parts": [
    {"function_response": {"id": "c1", "name": "charge_card", "response": {"result": "ok"}}},
    {"function_response": {"id": "c2", "name": "lookup",
                           "response": {"error": "TOOL_OUTCOME_UNKNOWN: verify"}}},
]}  # fmt: skip


def test_contents_are_a_history_of_text_calls_and_responses() -> None:
    done = {"role": "model", "parts": [{"text": "Charged"}]}
    more = {"role": "model", "parts": [{"text": "."}]}  # the same answer, continued
    assert to_history([USER, ASK, ANSWERS, done, more]) == History((
        Message("user", "pay 40"),
        Message("assistant", "Charging.", (Call("c1", "charge_card", {"amount": 40}),
                                           Call("c2", "lookup", {}))),
        Message("tool", "ok", (), "c1"),
        Message("tool", "TOOL_OUTCOME_UNKNOWN: verify", (), "c2", True),
        Message("assistant", "Charged."),
    ))  # fmt: skip


def _database(path: Path, events: list[tuple[str, str, bytes | None]]) -> Path:
    """ADK's events table (schema v1) holding `events` (id, timestamp, data)
    of session `s` of user `u`, and one event of another session."""
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE events (id VARCHAR(128) NOT NULL, app_name VARCHAR(128) NOT NULL, "
               "user_id VARCHAR(128) NOT NULL, session_id VARCHAR(128) NOT NULL, "
               "invocation_id VARCHAR(256) NOT NULL, timestamp DATETIME NOT NULL, "
               "event_data TEXT, PRIMARY KEY (id, app_name, user_id, session_id))")  # fmt: skip
    rows = [(i, "app", "u", "s", "inv", t, d) for i, t, d in events]
    rows.append(("x", "app", "u", "other", "inv", "2026-01-01 00:00:00", b'{"content": {}}'))
    db.executemany("INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
    db.commit()
    db.close()
    return path


def test_a_stored_session_is_read_in_adks_order(tmp_path: Path) -> None:
    events = [("b", "2026-01-01 00:00:02", orjson.dumps({"content": ASK})),
              ("a", "2026-01-01 00:00:01", orjson.dumps({"content": USER})),
              ("d", "2026-01-01 00:00:03", orjson.dumps({"actions": {}})),  # no content
              ("c", "2026-01-01 00:00:03", orjson.dumps({"content": ANSWERS}))]  # fmt: skip
    stored = read_database_session(_database(tmp_path / "s.sqlite", events), user_id="u",
                                   session_id="s", limit=1 << 20)  # fmt: skip
    assert stored is not None and stored.count == 4
    assert stored.history == to_history([USER, ASK, ANSWERS])


def test_another_store_is_not_read_and_a_bad_one_is_refused(tmp_path: Path) -> None:
    other = tmp_path / "other.sqlite"
    sqlite3.connect(other).execute("CREATE TABLE agent_messages (id INTEGER)").connection.close()
    assert read_database_session(other, user_id="u", session_id="s", limit=100) is None
    bad = _database(tmp_path / "bad.sqlite", [("a", "2026-01-01 00:00:01", b"{not json")])
    with pytest.raises(ValueError, match="not JSON"):
        read_database_session(bad, user_id="u", session_id="s", limit=1 << 20)
    big = _database(tmp_path / "big.sqlite", [("a", "2026-01-01", orjson.dumps({"content": USER}))])
    with pytest.raises(ValueError, match="limit 10"):
        read_database_session(big, user_id="u", session_id="s", limit=10)
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"not a database at all" * 100)
    with pytest.raises(sqlite3.DatabaseError):
        read_database_session(junk, user_id="u", session_id="s", limit=100)


@pytest.mark.realprocess
def test_the_lab_never_imports_adk() -> None:
    code = ("import sys, faultlab.lab, faultlab.lab.apps, faultlab.cli; "
            "import faultlab.lab.apps.adkstate, faultlab.lab.apps.storeread; "
            "print(sorted(m for m in sys.modules if m.startswith('google.adk')))")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=Path(__file__).resolve().parents[4])  # fmt: skip
    assert out.stdout.strip() == "[]"
