# Readers of real agents' session logs, on small hand-made logs in the shapes
# measured at bring-up (Claude Code 2.1.332, Codex 0.171.0, Agents SDK 0.24.0),
# including the torn last line a SIGKILL leaves.
from __future__ import annotations

import sqlite3
from pathlib import Path

import orjson
import pytest

from faultlab.lab.errors import LabUsageError
from faultlab.lab.read.agentlogs import (
    read_agent_log,
    read_chat_jsonl,
    read_claude_code,
    read_codex,
    read_deepseek_harness,
    read_openai_agents_sqlite,
)
from faultlab.lab.read.histories import pairing_problems
from faultlab.lab.read.wire import bare_tool_name


def _jsonl(*records: object) -> bytes:
    return b"".join(orjson.dumps(r) + b"\n" for r in records)


CLAUDE = _jsonl(
    {"type": "queue-operation", "operation": "enqueue", "sessionId": "s"},
    {"type": "user", "uuid": "u1", "parentUuid": None, "isSidechain": False,
     "message": {"role": "user", "content": "Charge card 4242"}},
    {"type": "attachment", "uuid": "a1", "parentUuid": "u1", "attachment": {"type": "x"}},
    {"type": "api-request-blob", "message": {"role": "system", "content": "env"}},
    {"type": "assistant", "uuid": "m1", "parentUuid": "a1", "isSidechain": False,
     "message": {"role": "assistant", "content": [
         {"type": "tool_use", "id": "toolu_1", "name": "mcp__faultlab__charge_card",
          "input": {"card": "4242", "amount_cents": 500}}]}},
    {"type": "user", "uuid": "u2", "parentUuid": "m1", "isSidechain": False,
     "message": {"role": "user", "content": [
         {"tool_use_id": "toolu_1", "type": "tool_result",
          "content": '{"result":"charged 500 to 4242"}'}]}},
    {"type": "assistant", "uuid": "m2", "isSidechain": True,
     "message": {"role": "assistant", "content": [{"type": "text", "text": "side"}]}},
    {"type": "assistant", "uuid": "m3", "parentUuid": "u2", "isSidechain": False,
     "message": {"role": "assistant", "content": [{"type": "text", "text": "Done."}]}},
)  # fmt: skip

CODEX = _jsonl(
    {"timestamp": "t", "type": "session_meta", "payload": {"id": "01a2"}},
    {"timestamp": "t", "type": "response_item", "payload": {
        "type": "message", "role": "developer", "content": [{"type": "input_text", "text": "x"}]}},
    {"timestamp": "t", "type": "response_item", "payload": {
        "type": "message", "role": "user",
        "content": [{"type": "input_text", "text": "Charge card 4242"}]}},
    {"timestamp": "t", "type": "event_msg", "payload": {"type": "task_started"}},
    {"timestamp": "t", "type": "response_item", "payload": {
        "type": "function_call", "name": "charge_card", "namespace": "mcp__faultlab",
        "arguments": '{"card": "4242", "amount_cents": 500}', "call_id": "call_1"}},
    {"timestamp": "t", "type": "response_item", "payload": {
        "type": "function_call_output", "call_id": "call_1",
        "output": "Wall time: 0.0046 seconds\nOutput:\n{\"result\":\"charged\"}"}},
    {"timestamp": "t", "type": "response_item", "payload": {
        "type": "message", "role": "assistant",
        "content": [{"type": "output_text", "text": "Done.", "annotations": []}]}},
)  # fmt: skip


def test_claude_code_project_jsonl_becomes_a_valid_history() -> None:
    log = read_claude_code(CLAUDE, "p.jsonl")
    h = log.history
    assert [m.role for m in h.messages] == ["user", "assistant", "tool", "assistant"]
    (call,) = h.calls()
    assert (call.id, call.name, call.arguments["amount_cents"]) == ("toolu_1", "charge_card", 500)
    assert h.results()["toolu_1"].text == '{"result":"charged 500 to 4242"}'
    assert "side" not in [m.text for m in h.messages]  # side chains left out
    assert pairing_problems(h) == [] and log.skipped == 0


def test_a_torn_last_line_is_skipped_and_counted() -> None:
    torn = CLAUDE + b'{"type": "assistant", "message": {"role": "assis'
    log = read_claude_code(torn)
    assert log.skipped == 1
    assert log.history == read_claude_code(CLAUDE).history
    # Cut right after the tool_use line: the call is there, its result is not.
    cut = CLAUDE[: CLAUDE.index(b'"u2"')]
    cut = cut[: cut.rindex(b"\n") + 1] + b'{"type": "user", "uu'
    h = read_claude_code(cut).history
    assert [c.name for c in h.calls()] == ["charge_card"] and h.results() == {}
    assert pairing_problems(h) == []  # a dangling call at the end is not (yet) a violation


def test_codex_rollout_keeps_namespace_calls_and_drops_developer_text() -> None:
    log = read_codex(CODEX + b'{"timestamp": "t", "type": "resp', "r.jsonl")
    h = log.history
    assert log.skipped == 1
    assert [m.role for m in h.messages] == ["user", "assistant", "tool", "assistant"]
    assert h.user_texts() == ["Charge card 4242"]
    (call,) = h.calls()
    assert (call.id, call.name, call.arguments) == (
        "call_1", "charge_card", {"card": "4242", "amount_cents": 500})
    assert "charged" in h.results()["call_1"].text


def _sdk_db(path: Path, items: list[dict[str, object]], *, other: bool = False) -> None:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE agent_sessions (session_id TEXT PRIMARY KEY)")
    conn.execute("CREATE TABLE agent_messages (id INTEGER PRIMARY KEY AUTOINCREMENT, "
                 "session_id TEXT NOT NULL, message_data TEXT NOT NULL)")  # fmt: skip
    for item in items:
        conn.execute("INSERT INTO agent_messages (session_id, message_data) VALUES (?, ?)",
                     ("s1", orjson.dumps(item).decode()))  # fmt: skip
    if other:
        conn.execute("INSERT INTO agent_messages (session_id, message_data) VALUES (?, ?)",
                     ("s2", '{"role": "user", "content": "other"}'))  # fmt: skip
    conn.execute("INSERT INTO agent_messages (session_id, message_data) VALUES ('s1', '{torn')")
    conn.commit()
    conn.close()


def test_agents_sdk_sqlite_session_reads_one_session(tmp_path: Path) -> None:
    db = tmp_path / "session.sqlite3"
    _sdk_db(db, [
        {"content": "Charge card 4242", "role": "user"},
        {"arguments": '{"card": "4242"}', "call_id": "call_a", "name": "charge_card",
         "type": "function_call", "id": "__fake_id__"},
        {"call_id": "call_a", "output": [{"type": "input_text", "text": "charged"}],
         "type": "function_call_output"},
        {"id": "__fake_id__", "role": "assistant", "type": "message", "status": "completed",
         "content": [{"type": "output_text", "text": "Done.", "annotations": []}]},
    ], other=True)  # fmt: skip
    log = read_openai_agents_sqlite(db, "s1")
    assert [m.role for m in log.history.messages] == ["user", "assistant", "tool", "assistant"]
    assert log.history.results()["call_a"].text == "charged"
    assert log.skipped == 1
    assert "other" in read_agent_log("openai-agents-sqlite", db).history.user_texts()
    (tmp_path / "junk.sqlite3").write_bytes(b"not a database at all" * 10)
    with pytest.raises(LabUsageError, match="not an Agents SDK session database"):
        read_openai_agents_sqlite(tmp_path / "junk.sqlite3")


def test_deepseek_harness_plain_and_zstd_jsonl(tmp_path: Path) -> None:
    records = _jsonl(
        {"kind": "header", "session": "x"},
        {"kind": "message", "message": {"role": "user", "content": "Charge"}},
        {"kind": "message", "message": {"role": "assistant", "content": [
            {"type": "tool_use", "id": "t1", "name": "charge_card", "input": {}}]}},
    )  # fmt: skip
    h = read_deepseek_harness(records + b'{"kind": "mess').history
    assert [c.id for c in h.calls()] == ["t1"]
    zstandard = pytest.importorskip("zstandard", reason="the zstd decoder is optional")
    packed = zstandard.ZstdCompressor().compress(records)
    assert read_deepseek_harness(packed).history == read_deepseek_harness(records).history


def test_tool_names_and_reader_errors(tmp_path: Path) -> None:
    assert bare_tool_name("mcp__faultlab__charge_card") == "charge_card"
    assert bare_tool_name("charge_card", "mcp__faultlab") == "charge_card"
    assert bare_tool_name("mcp__faultlab__charge_card", "mcp__faultlab") == "charge_card"
    assert bare_tool_name("Bash") == "Bash"
    with pytest.raises(LabUsageError, match="unknown session reader 'vim'"):
        read_agent_log("vim", tmp_path / "x")
    with pytest.raises(LabUsageError, match="cannot read the session log"):
        read_agent_log("codex", tmp_path / "absent.jsonl")
    with pytest.raises(LabUsageError, match="read_log_file"):
        read_agent_log("faultlab-log", tmp_path / "x")


def test_a_chat_messages_jsonl_reads_as_the_app_appended_it(tmp_path: Path) -> None:
    # examples/node_agent_app's session: one Chat Completions message per line.
    log = tmp_path / "session.jsonl"
    log.write_bytes(_jsonl(
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "Charge card 4242"},
        {"role": "assistant", "content": "Charging.", "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "charge_card", "arguments": '{"card": "4242"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "charged"},
        {"role": "robot", "content": "not a chat message"},
    ) + b'{"role": "assistant", "cont')  # fmt: skip
    read = read_agent_log("openai-chat-jsonl", log)
    assert [m.role for m in read.history.messages] == ["user", "assistant", "tool"]
    assert [(c.name, c.arguments) for c in read.history.calls()] == [
        ("charge_card", {"card": "4242"})]
    assert read.history.results()["call_1"].text == "charged"
    assert read.skipped == 2  # the unknown role and the torn last line
    assert read_chat_jsonl(b"").history.messages == ()
