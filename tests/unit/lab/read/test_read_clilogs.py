# Readers of Gemini CLI's, Qwen Code's and opencode's own session logs, on
# small logs in the shapes measured with Gemini CLI 0.61.0, Qwen Code 0.24.4
# and opencode 1.18.33 (trimmed copies of what each wrote in a faultlab case),
# including the states a SIGKILL leaves: a torn last line, a model turn
# written before its tool ran, a tool part still running.
from __future__ import annotations

import sqlite3
from pathlib import Path

import orjson
import pytest

from faultlab.lab.errors import LabUsageError
from faultlab.lab.read.agentlogs import read_agent_log
from faultlab.lab.read.clilogs import read_gemini_cli, read_opencode_sqlite, read_qwen_code
from faultlab.lab.read.histories import pairing_problems


def _jsonl(*records: object) -> bytes:
    return b"".join(orjson.dumps(r) + b"\n" for r in records)


_CALL = "mcp_faultlab_charge_card__call_fl1s0c0"
_RESPONSE = {"functionResponse": {"id": _CALL, "name": "mcp_faultlab_charge_card",
                                  "response": {"output": "charged 40.00 EUR"}}}  # fmt: skip
_GEMINI_TURN = {"id": "g1", "type": "gemini", "content": "Charging the card.", "thoughts": []}
_GEMINI_TURN_DONE = {**_GEMINI_TURN, "toolCalls": [{
    "id": _CALL, "name": "mcp_faultlab_charge_card", "args": {"amount": 40, "currency": "EUR"},
    "result": [_RESPONSE], "status": "success"}]}
_GEMINI_HEAD = (
    {"sessionId": "s1", "projectHash": "h", "startTime": "t", "kind": "main"},
    {"$set": {"messages": [{"id": "c0", "type": "user",
                            "content": [{"text": "<session_context>\nenv\n</session_context>"}]}]}},
    {"id": "u1", "type": "user", "content": [{"text": "Charge the customer 40 EUR."}]},
    {"$set": {"lastUpdated": "t"}},
)  # fmt: skip


def test_gemini_cli_model_turn_is_rewritten_in_place_with_its_calls() -> None:
    # Gemini CLI writes the model turn first, then the same id again with its
    # toolCalls and results once the tool ran: the later record wins, in place.
    data = _jsonl(*_GEMINI_HEAD, _GEMINI_TURN, _GEMINI_TURN_DONE,
                  {"id": "g2", "type": "gemini", "content": "The card was charged."})
    log = read_gemini_cli(data)
    messages = log.history.to_json()
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant"]
    assert messages[0]["text"] == "Charge the customer 40 EUR."  # the env preamble left out
    assert messages[1]["calls"] == [{"id": _CALL, "name": "charge_card",
                                     "arguments": {"amount": 40, "currency": "EUR"}}]
    assert messages[2] == {"role": "tool", "text": "charged 40.00 EUR", "callId": _CALL}
    assert pairing_problems(log.history) == []


def test_gemini_cli_before_the_tool_ran_has_no_call_and_a_torn_line_is_counted() -> None:
    data = _jsonl(*_GEMINI_HEAD, _GEMINI_TURN) + b'{"id": "g1", "type": "gem'
    log = read_gemini_cli(data)
    assert log.history.calls() == []  # the call is not on disk until the tool finished
    assert log.skipped == 1


def test_gemini_cli_resumes_a_tool_response_twice_as_gemini_cli_does() -> None:
    # The user record of the tool's response is resumed besides the results
    # the model turn holds (Gemini CLI 0.61.0 sends both): the reader shows it.
    data = _jsonl(*_GEMINI_HEAD, _GEMINI_TURN_DONE,
                  {"id": "u2", "type": "user", "content": [_RESPONSE]})
    log = read_gemini_cli(data)
    assert [m.role for m in log.history.messages] == ["user", "assistant", "tool", "tool"]
    assert any("answered twice" in p for p in pairing_problems(log.history))


def test_gemini_cli_rewind_and_set_edit_the_messages() -> None:
    data = _jsonl(*_GEMINI_HEAD, _GEMINI_TURN_DONE, {"$rewindTo": "g1"},
                  {"id": "g3", "type": "gemini", "content": "Rewound."})
    assert [m.text for m in read_gemini_cli(data).history.messages] == [
        "Charge the customer 40 EUR.", "Rewound."]
    replaced = _jsonl(*_GEMINI_HEAD, {"$set": {"messages": [
        {"id": "x", "type": "user", "content": "Only this."}]}})
    assert read_gemini_cli(replaced).history.user_texts() == ["Only this."]


_QWEN = (
    {"uuid": "1", "type": "user", "message": {"role": "user", "parts": [{"text": "Charge it."}]}},
    {"uuid": "2", "type": "system", "subtype": "ui_telemetry", "systemPayload": {}},
    {"uuid": "3", "type": "assistant", "message": {"role": "model", "parts": [
        {"text": "Charging the card."},
        {"functionCall": {"id": "call_fl1s0c0", "name": "mcp__faultlab__charge_card",
                          "args": {"amount": 40, "currency": "EUR"}}}]}},
    {"uuid": "4", "type": "tool_result", "message": {"role": "user", "parts": [
        {"functionResponse": {"id": "call_fl1s0c0", "name": "mcp__faultlab__charge_card",
                              "response": {"output": "charged 40.00 EUR"}}}]}},
)  # fmt: skip


def test_qwen_code_chat_jsonl_and_its_torn_tail(tmp_path: Path) -> None:
    log = read_qwen_code(_jsonl(*_QWEN) + b'{"uuid": "5", "type": "assis')
    messages = log.history.to_json()
    assert [m["role"] for m in messages] == ["user", "assistant", "tool"]
    assert messages[1]["calls"][0]["name"] == "charge_card"
    assert messages[2]["callId"] == "call_fl1s0c0"
    assert log.skipped == 1
    # A kill before the tool result leaves the call unanswered on disk.
    cut = read_qwen_code(_jsonl(*_QWEN[:3]))
    assert [c.id for c in cut.history.calls()] == ["call_fl1s0c0"]
    assert cut.history.results() == {}
    path = tmp_path / "s.jsonl"
    path.write_bytes(_jsonl(*_QWEN))
    assert read_agent_log("qwen-code", path).history == log.history


def _opencode_db(path: Path, *, status: str = "completed") -> None:
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode=WAL")  # as opencode keeps it
    conn.executescript("""
        CREATE TABLE session (id TEXT PRIMARY KEY, parent_id TEXT, time_updated INTEGER);
        CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT, time_created INTEGER,
                              data TEXT);
        CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT, session_id TEXT, data TEXT);
        INSERT INTO session VALUES ('ses_old', NULL, 1), ('ses_b', NULL, 5),
                                   ('ses_sub', 'ses_b', 9);
    """)
    state = {"status": status, "input": {"amount": 40, "currency": "EUR"}}
    if status == "completed":
        state["output"] = "charged 40.00 EUR"
    text = {"type": "text", "text": "Charge"}
    rows = [("msg_1", "ses_b", 1, {"role": "user"}, [("prt_1", text)]),
            ("msg_2", "ses_b", 2, {"role": "assistant"}, [
                ("prt_2", {"type": "step-start"}),
                ("prt_3", {"type": "text", "text": "Charging the card."}),
                ("prt_4", {"type": "tool", "tool": "faultlab_charge_card",
                           "callID": "call_fl1s0c0", "state": state})]),
            ("msg_3", "ses_old", 0, {"role": "user"}, [("prt_0", {"type": "text", "text": "old"})]),
            ("msg_4", "ses_sub", 3, {"role": "user"}, [("prt_9", {"type": "text", "text": "sub"})])]
    for mid, sid, created, data, parts in rows:
        conn.execute("INSERT INTO message VALUES (?, ?, ?, ?)",
                     (mid, sid, created, orjson.dumps(data).decode()))
        for pid, part in parts:
            conn.execute("INSERT INTO part VALUES (?, ?, ?, ?)",
                         (pid, mid, sid, orjson.dumps(part).decode()))
    conn.commit()
    conn.close()


def test_opencode_sqlite_reads_the_newest_top_level_session(tmp_path: Path) -> None:
    db = tmp_path / "opencode.db"
    _opencode_db(db)
    log = read_opencode_sqlite(db)
    messages = log.history.to_json()
    assert [m["role"] for m in messages] == ["user", "assistant", "tool"]
    assert messages[0]["text"] == "Charge"  # not ses_old's, not the sub-agent's
    assert messages[1]["calls"] == [{"id": "call_fl1s0c0", "name": "charge_card",
                                     "arguments": {"amount": 40, "currency": "EUR"}}]
    assert messages[2] == {"role": "tool", "text": "charged 40.00 EUR", "callId": "call_fl1s0c0"}
    assert read_opencode_sqlite(db, "ses_old").history.user_texts() == ["old"]
    assert read_agent_log("opencode-sqlite", db).history == log.history


def test_opencode_running_tool_has_no_result_and_an_error_is_one(tmp_path: Path) -> None:
    running = tmp_path / "running.db"
    _opencode_db(running, status="running")
    history = read_opencode_sqlite(running).history
    assert [m.role for m in history.messages] == ["user", "assistant"]
    # The call unanswered, as on disk at the kill.
    assert [c.id for c in history.calls()] == ["call_fl1s0c0"]
    assert history.results() == {}
    failed = tmp_path / "failed.db"
    _opencode_db(failed, status="error")
    assert read_opencode_sqlite(failed).history.messages[-1].is_error


def test_opencode_reader_refuses_what_is_not_its_database(tmp_path: Path) -> None:
    with pytest.raises(LabUsageError, match="no such opencode database"):
        read_opencode_sqlite(tmp_path / "missing.db")
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not sqlite at all" * 100)
    with pytest.raises(LabUsageError, match="not an opencode database"):
        read_opencode_sqlite(junk)
