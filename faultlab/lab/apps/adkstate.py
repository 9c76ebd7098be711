# Google ADK contents (`google.genai` `Content`s as JSON: what an ADK
# session's events carry and what an `LlmRequest` sends a model) as the
# lab's History, and the events of one session as ADK's
# DatabaseSessionService stores them in SQLite (its `events` table, one
# JSON `event_data` per event), read by the lab itself.  Read by their keys
# only, so the lab imports this module without the optional extra; the
# child (adkchild) uses it for what its scripted model is sent and for the
# events a custom SessionService returns from `get_session`.
from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from faultlab.lab.read.histories import Call, History, Message

__all__ = ["StoredSession", "read_database_session", "response_text", "to_history"]


def response_text(response: Any) -> tuple[str, bool]:
    """A function response's text for the model and whether it is an error:
    ADK's convention is a dict with `result` (a tool's return value is
    wrapped so) or `error`; anything else is its JSON."""
    if isinstance(response, Mapping):
        if "error" in response:
            return str(response["error"]), True
        if "result" in response:
            return str(response["result"]), False
    return orjson.dumps(response, default=str).decode(), False


def _parts(content: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    parts = content.get("parts") or []
    return [p for p in parts if isinstance(p, Mapping)]


def _call(raw: Mapping[str, Any]) -> Call:
    arguments = raw.get("args")
    return Call(str(raw.get("id")), str(raw.get("name")),
                dict(arguments) if isinstance(arguments, Mapping) else {})  # fmt: skip


def to_history(contents: Sequence[Mapping[str, Any]]) -> History:
    """User text, model text and function calls, function responses as tool
    messages (one per response, in part order).  A model content right
    after a model content with no calls is the same answer continued (a
    streamed or split response), as the model produced it; thoughts are
    not history."""
    out: list[Message] = []
    for content in contents:
        role = content.get("role")
        parts = _parts(content)
        text = "".join(str(p["text"]) for p in parts
                       if isinstance(p.get("text"), str) and not p.get("thought"))  # fmt: skip
        calls = tuple(_call(p["function_call"]) for p in parts
                      if isinstance(p.get("function_call"), Mapping))  # fmt: skip
        for p in parts:
            response = p.get("function_response")
            if isinstance(response, Mapping):
                answer, is_error = response_text(response.get("response"))
                out.append(Message("tool", answer, (), str(response.get("id")), is_error))
        if role == "model" and (text or calls):
            last = out[-1] if out else None
            if last is not None and last.role == "assistant" and not last.calls:
                out[-1] = Message("assistant", last.text + text, calls)
            else:
                out.append(Message("assistant", text, calls))
        elif role == "user" and text:
            out.append(Message("user", text))
    return History(tuple(out))


@dataclass(frozen=True, slots=True)
class StoredSession:
    """One session's stored events, oldest first: how many, and their
    contents as the lab's History."""

    count: int
    history: History


def read_database_session(path: Path, *, user_id: str, session_id: str,
                          limit: int) -> StoredSession | None:  # fmt: skip
    """The events of session `session_id` of `user_id` in the SQLite
    database at `path` (a scratch copy: SQLite may write beside it), in
    ADK's order (timestamp, then id); None when the database does not have
    the DatabaseSessionService's `events` table (another store: the app's
    own service reads it).  Raises `ValueError` when the events' JSON is
    larger than `limit` bytes or not JSON, `sqlite3.Error` when the file is
    not a database."""
    db = sqlite3.connect(path)
    try:
        columns = {row[1] for row in db.execute("PRAGMA table_info(events)")}
        if not {"event_data", "user_id", "session_id", "timestamp", "id"} <= columns:
            return None
        where = "FROM events WHERE user_id = ? AND session_id = ?"
        size = db.execute(f"SELECT coalesce(sum(length(event_data)), 0) {where}",
                          (user_id, session_id)).fetchone()[0]  # fmt: skip
        if size > limit:
            raise ValueError(f"the session's events hold {size} bytes of JSON (limit {limit})")
        rows = db.execute(f"SELECT event_data {where} ORDER BY timestamp, id",
                          (user_id, session_id)).fetchall()  # fmt: skip
    finally:
        db.close()
    contents: list[Mapping[str, Any]] = []
    for (raw,) in rows:
        try:
            event = orjson.loads(raw) if raw is not None else {}
        except orjson.JSONDecodeError as error:
            raise ValueError(f"an event's data is not JSON: {error}") from None
        content = event.get("content") if isinstance(event, Mapping) else None
        if isinstance(content, Mapping):
            contents.append(content)
    return StoredSession(len(rows), to_history(contents))
