# Readers for the session logs of Gemini CLI, Qwen Code and opencode, into
# the lab's one conversation shape (read/histories.py), each read the way the
# agent itself reads it back on resume (measured on Gemini CLI 0.61.0, Qwen
# Code 0.24.4 and opencode 1.18.33; docs/agents.md):
# - Gemini CLI: `~/.gemini/tmp/<project>/chats/session-*.jsonl`, a patch log:
#   message records keyed by `id` (a later record with the same id replaces
#   the earlier one in place: the model turn is rewritten with its
#   `toolCalls` and their results once the tools ran), `$set` edits (a
#   `messages` list replaces all) and `$rewindTo` (drops that message and
#   every later one);
# - Qwen Code: `~/.qwen/projects/<cwd>/chats/<session>.jsonl`, one record per
#   line; `user`, `assistant` and `tool_result` records hold a Gemini
#   `Content` (`role`, `parts`);
# - opencode: `~/.local/share/opencode/opencode.db`, SQLite (WAL): `message`
#   rows (role) and their `part` rows (text, tool with its state).
# Tool names lose the agent's MCP prefix (`mcp_faultlab_`, `mcp__faultlab__`,
# `faultlab_`), so the history names the scenario's tools.
from __future__ import annotations

from collections.abc import Iterable
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
from faultlab.lab.read.histories import Call, History, Message
from faultlab.lab.read.naming import DEFAULT_MCP_SERVER
from faultlab.lab.read.wire import history_from_gemini

__all__ = ["read_gemini_cli", "read_opencode_sqlite", "read_qwen_code"]

_GEMINI_CLI_PREFIX = f"mcp_{DEFAULT_MCP_SERVER}_"
_OPENCODE_PREFIX = f"{DEFAULT_MCP_SERVER}_"
# User content Gemini CLI leaves out of a resumed history (its environment
# preamble, slash commands, hook context).
_IGNORED_USER_PREFIXES = ("/", "?", "<session_context>", "<hook_context>")


def _parts(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"text": content}]
    if isinstance(content, dict):
        return [content]
    return [p for p in content if isinstance(p, dict)] if isinstance(content, list) else []


def _renamed(parts: Iterable[dict[str, Any]], prefix: str) -> list[dict[str, Any]]:
    """The parts with the agent's MCP prefix taken off call and response names."""
    out = []
    for part in parts:
        for key in ("functionCall", "functionResponse"):
            inner = part.get(key)
            if isinstance(inner, dict) and isinstance(inner.get("name"), str):
                part = {**part, key: {**inner, "name": inner["name"].removeprefix(prefix)}}
        out.append(part)
    return out


def _gemini_cli_messages(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The session's messages after every edit, in first-written order."""
    messages: dict[str, dict[str, Any]] = {}
    for record in records:
        rewind, edit = record.get("$rewindTo"), record.get("$set")
        if isinstance(rewind, str):
            order = list(messages)
            for key in order[order.index(rewind):] if rewind in messages else order:
                del messages[key]
        elif isinstance(record.get("id"), str):
            messages[record["id"]] = record  # a dict keeps the first position, as a JS Map
        elif isinstance(edit, dict) and isinstance(edit.get("messages"), list):
            messages = {m["id"]: m for m in edit["messages"]
                        if isinstance(m, dict) and isinstance(m.get("id"), str)}  # fmt: skip
        elif isinstance(record.get("sessionId"), str) and isinstance(record.get("messages"), list):
            messages |= {m["id"]: m for m in record["messages"]
                         if isinstance(m, dict) and isinstance(m.get("id"), str)}  # fmt: skip
    return list(messages.values())


def _tool_result_parts(call: dict[str, Any]) -> list[dict[str, Any]]:
    result = call.get("result")
    if isinstance(result, str):
        return [{"functionResponse": {"id": call.get("id"), "name": call.get("name"),
                                      "response": {"output": result}}}]  # fmt: skip
    if isinstance(result, list):
        return _parts(result)
    return [result] if isinstance(result, dict) else []


def _verbose(part: dict[str, Any]) -> str:
    """A part as Gemini CLI's verbose part-to-string gives it, which decides
    whether a user record is resumed: a functionResponse is not empty, so
    the user record of a tool's response is resumed besides the response
    its model turn's toolCalls hold (measured: both reach the model)."""
    if isinstance(part.get("text"), str) and len(part) == 1:
        return str(part["text"])
    for key, label in (("functionCall", "Function Call"),
                       ("functionResponse", "Function Response")):  # fmt: skip
        inner = part.get(key)
        if isinstance(inner, dict):
            return f"[{label}: {inner.get('name')}]"
    return str(part.get("text") or "") or "[part]"


def _gemini_cli_contents(messages: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Gemini `contents` as Gemini CLI rebuilds them on resume: a model turn
    with its calls, then one user turn of the results its toolCalls hold."""
    contents: list[dict[str, Any]] = []
    for message in messages:
        parts = _parts(message.get("content"))
        if message.get("type") == "user":
            text = "".join(_verbose(p) for p in parts).strip()
            if text and not text.startswith(_IGNORED_USER_PREFIXES):
                contents.append({"role": "user", "parts": parts})
            continue
        if message.get("type") != "gemini":
            continue  # info, error, warning
        calls = [c for c in message.get("toolCalls") or () if isinstance(c, dict)]
        model_parts = parts + [{"functionCall": {"id": c.get("id"), "name": c.get("name"),
                                                 "args": c.get("args") or {}}}
                               for c in calls]  # fmt: skip
        if model_parts:
            contents.append({"role": "model", "parts": model_parts})
        results = [p for c in calls for p in _tool_result_parts(c)]
        if results:
            contents.append({"role": "user", "parts": results})
    return [{**c, "parts": _renamed(c["parts"], _GEMINI_CLI_PREFIX)} for c in contents]


def read_gemini_cli(data: bytes, path: str = "<gemini-cli>") -> AgentLog:
    """Gemini CLI's chat file (`session-<time>-<id>.jsonl`)."""
    records, skipped = jsonl_records(data)
    contents = _gemini_cli_contents(_gemini_cli_messages(records))
    history, bad = parsed_history(history_from_gemini, "contents", contents)
    return AgentLog(path, history, skipped + bad)


def read_qwen_code(data: bytes, path: str = "<qwen-code>") -> AgentLog:
    """Qwen Code's chat file (`chats/<session id>.jsonl`): the Gemini
    `Content` of its user, assistant and tool-result records, in file order
    (system records, telemetry and attribution snapshots, left out)."""
    records, skipped = jsonl_records(data)
    contents = [r["message"] for r in records
                if r.get("type") in ("user", "assistant", "tool_result")
                and not r.get("isSidechain") and isinstance(r.get("message"), dict)]  # fmt: skip
    # Qwen Code keeps the built-in `mcp__faultlab__TOOL`, which the parser strips.
    history, bad = parsed_history(history_from_gemini, "contents", contents)
    return AgentLog(path, history, skipped + bad)


def _rows(where: Path, session_id: str | None) -> tuple[list[tuple[str, str]],
                                                         dict[str, list[str]]]:  # fmt: skip
    with sqlite_read_only(where, "an opencode database") as conn:
        if session_id is None:  # the newest top-level session (sub-agents have a parent)
            found = conn.execute("SELECT id FROM session WHERE parent_id IS NULL "
                                 "ORDER BY time_updated DESC, id DESC LIMIT 1").fetchone()
            session_id = found[0] if found else ""
        messages = conn.execute("SELECT id, data FROM message WHERE session_id = ? "
                                "ORDER BY time_created, id", (session_id,)).fetchall()
        parts: dict[str, list[str]] = {}
        for message_id, data in conn.execute(
                "SELECT message_id, data FROM part WHERE session_id = ? ORDER BY id",
                (session_id,)):  # fmt: skip
            parts.setdefault(str(message_id), []).append(data)
    return [(str(i), d) for i, d in messages], parts


def _json_object(raw: Any) -> dict[str, Any] | None:
    try:
        value = orjson.loads(raw)
    except (orjson.JSONDecodeError, TypeError):
        return None
    return value if isinstance(value, dict) else None


def _opencode_turn(role: str, parts: list[dict[str, Any]]) -> list[Message]:
    """One opencode message as the lab's messages: a user's text, or an
    assistant step's text and tool calls followed by the results its tool
    parts hold (a call still `pending` or `running` has none on disk)."""
    text = "\n".join(str(p.get("text") or "") for p in parts
                     if p.get("type") == "text" and p.get("text"))  # fmt: skip
    if role == "user":
        return [Message("user", text)] if text else []
    calls, results = [], []
    for part in parts:
        state = part.get("state")
        if part.get("type") != "tool" or not isinstance(state, dict):
            continue
        call_id, tool = str(part.get("callID") or part.get("id")), str(part.get("tool"))
        arguments = state.get("input")
        calls.append(Call(call_id, tool.removeprefix(_OPENCODE_PREFIX),
                          dict(arguments) if isinstance(arguments, dict) else {}))  # fmt: skip
        if state.get("status") == "completed":
            results.append(Message("tool", str(state.get("output") or ""), call_id=call_id))
        elif state.get("status") == "error":
            results.append(Message("tool", str(state.get("error") or ""), call_id=call_id,
                                   is_error=True))  # fmt: skip
    if not text and not calls:
        return []
    return [Message("assistant", text, tuple(calls)), *results]


def read_opencode_sqlite(path: str | Path, session_id: str | None = None) -> AgentLog:
    """opencode's `opencode.db` (read-only, so a live opencode keeps its
    lock): the messages of `session_id`, else of its newest top-level session."""
    where = Path(path)
    if not where.is_file():
        raise LabUsageError(f"{where}: no such opencode database")
    messages, parts = _rows(where, session_id)
    out: list[Message] = []
    skipped = 0
    for message_id, raw in messages:
        message = _json_object(raw)
        if message is None or message.get("role") not in ("user", "assistant"):
            skipped += 1
            continue
        own = [p for p in (_json_object(r) for r in parts.get(message_id, ())) if p is not None]
        skipped += len(parts.get(message_id, ())) - len(own)
        out += _opencode_turn(str(message["role"]), own)
    return AgentLog(str(where), History(tuple(out)), skipped)
