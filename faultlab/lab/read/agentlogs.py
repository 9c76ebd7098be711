# Readers for real agents' own session logs (what each agent had on disk at
# a kill), into the lab's one conversation shape (read/histories.py), so the
# report can show it next to what the resumed agent sent: Claude Code's
# project JSONL, Codex's rollout JSONL, the OpenAI Agents SDK's SQLiteSession
# and deepseek-harness's zstd-compressed JSONL (only where a zstd decoder is
# importable: optional).  A killed agent leaves a torn last line: it is
# skipped, and counted, never an error.
from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from faultlab.lab.errors import LabUsageError
from faultlab.lab.read.histories import Call, History, Message

__all__ = [
    "AGENT_READERS",
    "AgentLog",
    "normalise_tool_name",
    "read_agent_log",
    "read_claude_code",
    "read_codex",
    "read_deepseek_harness",
    "read_openai_agents_sqlite",
]


@dataclass(frozen=True, slots=True)
class AgentLog:
    """An agent's session log as read: the history it would resume from,
    and how many lines (or rows) could not be parsed (a torn tail)."""

    path: str
    history: History
    skipped: int = 0


def normalise_tool_name(name: str, namespace: str | None = None) -> str:
    """The scenario tool name: `mcp__SERVER__TOOL` (Claude Code, Codex's
    namespace `mcp__SERVER`) and `SERVER__TOOL` prefixes stripped."""
    if namespace and name.startswith(namespace):
        name = name[len(namespace):]
    if name.startswith("mcp__"):
        name = name[len("mcp__"):]
        name = name.split("__", 1)[1] if "__" in name else name
    return name.lstrip("_")


def _lines(data: bytes) -> tuple[list[dict[str, Any]], int]:
    records: list[dict[str, Any]] = []
    skipped = 0
    for raw in data.split(b"\n"):
        if not raw.strip():
            continue
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError:
            skipped += 1  # a torn (partial) line from a kill mid-write
            continue
        if isinstance(value, dict):
            records.append(value)
        else:
            skipped += 1
    return records, skipped


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict) and isinstance(block.get("text"), str):
                parts.append(block["text"])
        return "\n".join(parts)
    return ""


def _arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return {"_raw": raw}
        return value if isinstance(value, dict) else {"_raw": value}
    return {}


def _merge(messages: Iterable[Message]) -> History:
    """Consecutive assistant messages join into one (Claude Code writes one
    line per content block); tool results stay separate."""
    out: list[Message] = []
    for m in messages:
        if out and m.role == "assistant" and out[-1].role == "assistant":
            last = out[-1]
            text = "\n".join(t for t in (last.text, m.text) if t)
            out[-1] = Message("assistant", text, last.calls + m.calls)
        else:
            out.append(m)
    return History(tuple(out))


def _anthropic_messages(role: str, content: Any) -> Iterator[Message]:
    """One Anthropic-shaped message (Claude Code, deepseek-harness)."""
    if role == "assistant":
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        uses = [b for b in blocks if isinstance(b, dict) and b.get("type") == "tool_use"]
        calls = tuple(Call(str(b.get("id")), normalise_tool_name(str(b.get("name"))),
                           _arguments(b.get("input"))) for b in uses)  # fmt: skip
        text = _text([b for b in blocks if isinstance(b, dict) and b.get("type") == "text"])
        yield Message("assistant", text, calls)
        return
    if role != "user":
        return  # Claude Code also carries role "system" messages: not conversation
    if isinstance(content, str):
        yield Message("user", content)
        return
    texts = []
    for block in content if isinstance(content, list) else ():
        if isinstance(block, dict) and block.get("type") == "tool_result":
            yield Message("tool", _text(block.get("content")), (),
                          str(block.get("tool_use_id")), bool(block.get("is_error")))  # fmt: skip
        elif isinstance(block, dict) and block.get("type") == "text":
            texts.append(str(block.get("text", "")))
    if texts:
        yield Message("user", "\n".join(texts))


def read_claude_code(data: bytes, path: str = "<claude-code>") -> AgentLog:
    """`~/.claude/projects/<cwd-slug>/<session>.jsonl`: one record per line;
    `user`/`assistant` records hold an Anthropic message, the rest
    (attachments, queue operations, api-request copies, cost) is skipped.
    Side chains (sub-agents) are left out."""
    records, skipped = _lines(data)
    messages: list[Message] = []
    for r in records:
        if r.get("type") not in ("user", "assistant") or r.get("isSidechain"):
            continue
        message = r.get("message")
        if isinstance(message, dict):
            messages.extend(_anthropic_messages(str(message.get("role")), message.get("content")))
    return AgentLog(path, _merge(messages), skipped)


def _responses_items(items: Iterable[dict[str, Any]]) -> Iterator[Message]:
    """OpenAI Responses input items (Codex rollouts, the Agents SDK's store)."""
    for item in items:
        kind = item.get("type", "message" if "role" in item else None)
        if kind == "message":
            role = item.get("role")
            if role in ("user", "assistant"):
                yield Message(role, _text(item.get("content")))
        elif kind in ("function_call", "custom_tool_call"):
            name = normalise_tool_name(str(item.get("name")), item.get("namespace"))
            yield Message("assistant", "", (Call(str(item.get("call_id")), name,
                                                 _arguments(item.get("arguments")
                                                            or item.get("input"))),))  # fmt: skip
        elif kind in ("function_call_output", "custom_tool_call_output"):
            output = item.get("output")
            text = _text(output) if not isinstance(output, dict) else _text(output.get("content"))
            yield Message("tool", text, (), str(item.get("call_id")))


def read_codex(data: bytes, path: str = "<codex>") -> AgentLog:
    """`$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl`: records
    `{timestamp, type, payload}`; the `response_item` payloads are the
    conversation (developer messages left out, as a system prompt is)."""
    records, skipped = _lines(data)
    items = [r["payload"] for r in records
             if r.get("type") == "response_item" and isinstance(r.get("payload"), dict)]
    return AgentLog(path, _merge(_responses_items(items)), skipped)


def read_openai_agents_sqlite(path: str | Path, session_id: str | None = None) -> AgentLog:
    """An Agents SDK `SQLiteSession` file: table `agent_messages`
    (id, session_id, message_data JSON: one Responses input item), read-only
    so a reader never takes the write lock of a live app."""
    where = Path(path)
    if not where.is_file():
        raise LabUsageError(f"{where}: no such SQLite session file")
    try:
        conn = sqlite3.connect(f"file:{where}?mode=ro", uri=True)
        try:
            query = "SELECT message_data FROM agent_messages"
            rows = (conn.execute(query + " WHERE session_id = ? ORDER BY id", (session_id,))
                    if session_id is not None
                    else conn.execute(query + " ORDER BY id")).fetchall()  # fmt: skip
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        raise LabUsageError(f"{where}: not an Agents SDK session database: {exc}") from None
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
    return AgentLog(str(where), _merge(_responses_items(items)), skipped)


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
    records, skipped = _lines(data)
    messages: list[Message] = []
    for r in records:
        message = r.get("message") if isinstance(r.get("message"), dict) else r
        if isinstance(message, dict) and "role" in message and "content" in message:
            messages.extend(_anthropic_messages(str(message["role"]), message["content"]))
    return AgentLog(path, _merge(messages), skipped)


def _file_reader(reader: Callable[[bytes, str], AgentLog]) -> Callable[[Path], AgentLog]:
    return lambda where: reader(where.read_bytes(), str(where))


AGENT_READERS: dict[str, Callable[[Path], AgentLog]] = {
    "claude-code": _file_reader(read_claude_code),
    "codex": _file_reader(read_codex),
    "openai-agents-sqlite": read_openai_agents_sqlite,
    "deepseek-harness": _file_reader(read_deepseek_harness),
}


def read_agent_log(reader: str, path: str | Path) -> AgentLog:
    """Read one session log with the named reader (an adapter's `session.reader`)."""
    if reader == "faultlab-log":
        raise LabUsageError("faultlab's own log format is read by faultlab.lab.read.jsonl "
                            "(read_log_file), not by an agent-log reader")  # fmt: skip
    if reader not in AGENT_READERS:
        raise LabUsageError(f"unknown session reader {reader!r} "
                            f"(known: {', '.join(sorted(AGENT_READERS))})")  # fmt: skip
    where = Path(path)
    try:
        return AGENT_READERS[reader](where)
    except OSError as exc:
        raise LabUsageError(f"{where}: cannot read the session log: {exc.strerror}") from None
