# Readers for real agents' own session logs (what each agent had on disk at
# a kill), into the lab's one conversation shape (read/histories.py), so the
# report can show it next to what the resumed agent sent: Claude Code's
# project JSONL, Codex's rollout JSONL, the OpenAI Agents SDK's SQLiteSession
# deepseek-harness's zstd-compressed JSONL (only where a zstd decoder is
# importable: optional) and a JSONL of OpenAI Chat Completions messages, the
# plain format an app of a team's own may keep (examples/node_agent_app/);
# Gemini CLI's, Qwen Code's and opencode's are in
# read/clilogs.py.  A killed agent leaves a torn last line: it is
# skipped, and counted, never an error.
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from faultlab.lab.errors import LabUsageError
from faultlab.lab.read.agentlogbase import (
    AgentLog,
    jsonl_records,
    parsed_history,
    sqlite_read_only,
)
from faultlab.lab.read.clilogs import read_gemini_cli, read_opencode_sqlite, read_qwen_code
from faultlab.lab.read.userreaders import is_user_reader, user_history
from faultlab.lab.read.wire import history_from_anthropic, history_from_chat, history_from_responses
from faultlab.userfiles import MAX_LOG_BYTES, UserFileError, read_bytes

__all__ = [
    "AGENT_READERS",
    "AgentLog",
    "read_agent_log",
    "read_chat_jsonl",
    "read_claude_code",
    "read_codex",
    "read_deepseek_harness",
    "read_openai_agents_sqlite",
]


def read_claude_code(data: bytes, path: str = "<claude-code>") -> AgentLog:
    """`~/.claude/projects/<cwd-slug>/<session>.jsonl`: one record per line;
    `user`/`assistant` records hold an Anthropic message, the rest
    (attachments, queue operations, api-request copies, cost) is skipped.
    Side chains (sub-agents) are left out."""
    records, skipped = jsonl_records(data)
    messages = [r["message"] for r in records
                if r.get("type") in ("user", "assistant") and not r.get("isSidechain")
                and isinstance(r.get("message"), dict)]  # fmt: skip
    history, bad = parsed_history(history_from_anthropic, "messages", messages)
    return AgentLog(path, history, skipped + bad)


def read_codex(data: bytes, path: str = "<codex>") -> AgentLog:
    """`$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl`: records
    `{timestamp, type, payload}`; the `response_item` payloads are the
    conversation (developer messages left out, as a system prompt is)."""
    records, skipped = jsonl_records(data)
    items = [r["payload"] for r in records
             if r.get("type") == "response_item" and isinstance(r.get("payload"), dict)]
    history, bad = parsed_history(history_from_responses, "input", items)
    return AgentLog(path, history, skipped + bad)


def read_chat_jsonl(data: bytes, path: str = "<openai-chat-jsonl>") -> AgentLog:
    """One OpenAI Chat Completions message per line (`role` user, assistant
    with `tool_calls`, tool with `tool_call_id`; system messages left out),
    in the order the app appended them."""
    records, skipped = jsonl_records(data)
    history, bad = parsed_history(history_from_chat, "messages", records)
    return AgentLog(path, history, skipped + bad)


def read_openai_agents_sqlite(path: str | Path, session_id: str | None = None) -> AgentLog:
    """An Agents SDK `SQLiteSession` file: table `agent_messages`
    (id, session_id, message_data JSON: one Responses input item), read-only
    so a reader never takes the write lock of a live app."""
    where = Path(path)
    if not where.is_file():
        raise LabUsageError(f"{where}: no such SQLite session file")
    with sqlite_read_only(where, "an Agents SDK session database") as conn:
        query = "SELECT message_data FROM agent_messages"
        rows = (conn.execute(query + " WHERE session_id = ? ORDER BY id", (session_id,))
                if session_id is not None
                else conn.execute(query + " ORDER BY id")).fetchall()  # fmt: skip
    items: list[dict[str, Any]] = []
    skipped = 0
    for (raw,) in rows:
        try:
            value = orjson.loads(raw)
        except (orjson.JSONDecodeError, TypeError):
            skipped += 1
            continue
        if isinstance(value, dict):
            items.append(value)
    history, bad = parsed_history(history_from_responses, "input", items)
    return AgentLog(str(where), history, skipped + bad)


def _zstd_decompress(data: bytes) -> bytes:
    try:
        import zstandard  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        raise LabUsageError("reading deepseek-harness sessions needs a zstd decoder: "
                            "pip install zstandard (optional)") from None  # fmt: skip
    # A killed writer leaves a truncated frame: decode what is there.
    reader = zstandard.ZstdDecompressor().decompressobj()
    try:
        return bytes(reader.decompress(data))
    except zstandard.ZstdError:
        return b""


def read_deepseek_harness(data: bytes, path: str = "<deepseek-harness>") -> AgentLog:
    """`DSH_HOME/sessions/<slug>/<id>/session.v4.jsonl.zstd`: zstd-compressed
    JSONL (plain JSONL accepted too).  Records whose `message` (or the record
    itself) has an Anthropic `role`/`content` are the conversation.  Written
    from FACTS.md, not from a measured log: the record shape is unconfirmed."""
    if data[:4] == b"\x28\xb5\x2f\xfd":  # the zstd frame magic
        data = _zstd_decompress(data)
    records, skipped = jsonl_records(data)
    messages = [m for m in (r.get("message") if isinstance(r.get("message"), dict) else r
                            for r in records)
                if isinstance(m, dict) and "role" in m and "content" in m]  # fmt: skip
    history, bad = parsed_history(history_from_anthropic, "messages", messages)
    return AgentLog(path, history, skipped + bad)


def _file_reader(reader: Callable[[bytes, str], AgentLog]) -> Callable[[Path], AgentLog]:
    return lambda where: reader(read_bytes(where, what="session log", limit=MAX_LOG_BYTES),
                                str(where))  # fmt: skip


AGENT_READERS: dict[str, Callable[[Path], AgentLog]] = {
    "claude-code": _file_reader(read_claude_code),
    "codex": _file_reader(read_codex),
    "openai-agents-sqlite": read_openai_agents_sqlite,
    "deepseek-harness": _file_reader(read_deepseek_harness),
    "gemini-cli": _file_reader(read_gemini_cli),
    "qwen-code": _file_reader(read_qwen_code),
    "opencode-sqlite": read_opencode_sqlite,
    "openai-chat-jsonl": _file_reader(read_chat_jsonl),
}


def read_agent_log(reader: str, path: str | Path, *, near: Path | None = None) -> AgentLog:
    """Read one session log with the named reader (an adapter's `session.reader`:
    a bundled reader's name, or a user's `module:function`, looked for in
    `near`, the adapter's folder, first)."""
    if reader == "faultlab-log":
        raise LabUsageError("faultlab's own log format is read by faultlab.lab.read.jsonl "
                            "(read_log_file), not by an agent-log reader")  # fmt: skip
    where = Path(path)
    if is_user_reader(reader):  # a user's own `module:function` (read/userreaders.py)
        return AgentLog(str(where), user_history(reader, where, near=near))
    if reader not in AGENT_READERS:
        raise LabUsageError(f"unknown session reader {reader!r} (known: "
                            f"{', '.join(sorted(AGENT_READERS))}, or module:function)")  # fmt: skip
    try:
        return AGENT_READERS[reader](where)
    except OSError as exc:
        raise LabUsageError(f"{where}: cannot read the session log: {exc.strerror}") from None
    except UserFileError as exc:  # a FIFO, a device, a loop, too big (faultlab.userfiles)
        raise LabUsageError(f"{where}: cannot read the session log: {exc.problem}") from None
