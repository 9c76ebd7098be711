# How session log events are shown to an ACP client as session/update
# notifications.  Live (during session/prompt) the text streams as chunks;
# replayed (session/load) each assistant message is one chunk, since chunks
# are lossy between checkpoints.  Only the conversation is shown: user and
# assistant text, top-level tool calls and their results (synthetic repair
# results included, with their codes under `_meta.faultlab`).  Nested calls,
# requests and step/turn bookkeeping stay in the log.
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from acp import text_block, tool_content
from acp.schema import (
    AgentMessageChunk,
    ToolCallProgress,
    ToolCallStart,
    UserMessageChunk,
)

from faultlab.runtime.acp import META_KEY
from faultlab.runtime.events import (
    ABORTED_BEFORE_DISPATCH,
    ASSISTANT_CHUNK,
    ASSISTANT_MESSAGE,
    TOOL_CALL,
    TOOL_RESULT,
    USER_MESSAGE,
    Event,
)
from faultlab.runtime.history import tool_calls_of

__all__ = ["ReadOnly", "Update", "live_updates", "replay_updates"]

Update = UserMessageChunk | AgentMessageChunk | ToolCallStart | ToolCallProgress
# tool name -> True when the tool only reads (shown with kind "read")
ReadOnly = Callable[[str], bool]


def _message_id(data: dict[str, Any]) -> str:
    return f"t{data['turn']}-s{data['step']}"


def _text_of(message: dict[str, Any]) -> str:
    return "".join(b["text"] for b in message.get("content", ()) if b.get("type") == "text")


def _starts(message: dict[str, Any], read_only: ReadOnly) -> list[Update]:
    return [
        ToolCallStart(
            session_update="tool_call",
            tool_call_id=block["id"],
            title=block["name"],
            kind="read" if read_only(block["name"]) else "execute",
            status="pending",
            raw_input=block["arguments"],
            field_meta={META_KEY: {"name": block["name"]}},
        )
        for block in tool_calls_of(message)
    ]


def _result(data: dict[str, Any]) -> ToolCallProgress:
    error = data.get("error") or {}
    meta: dict[str, Any] = {
        "code": error.get("code"),
        "synthetic": bool(data.get("synthetic")),
        "cancelled": error.get("code") == ABORTED_BEFORE_DISPATCH,
    }
    if "retry" in error:
        meta["retry"] = error["retry"]
    raw: dict[str, Any] = {"content": data["content"], "isError": data["isError"]}
    if error:
        raw["error"] = error
    return ToolCallProgress(
        session_update="tool_call_update",
        tool_call_id=data["callId"],
        status="failed" if data["isError"] else "completed",
        content=[tool_content(text_block(data["content"]))],
        raw_output=raw,
        field_meta={META_KEY: meta},
    )


def _dispatched(data: dict[str, Any]) -> ToolCallProgress:
    return ToolCallProgress(
        session_update="tool_call_update", tool_call_id=data["callId"], status="in_progress"
    )


def live_updates(event: Event, read_only: ReadOnly) -> list[Update]:
    """What the client is shown when `event` is appended during a prompt."""
    data = event.data
    if event.type == ASSISTANT_CHUNK:
        return [
            AgentMessageChunk(
                session_update="agent_message_chunk",
                content=text_block(data["delta"]),
                message_id=_message_id(data),
            )
        ]
    if event.type == ASSISTANT_MESSAGE:
        return _starts(data["message"], read_only)
    return _tool_updates(event)


def _tool_updates(event: Event) -> list[Update]:
    if "parentCallId" in event.data:
        return []  # nested calls are the runtime's business
    if event.type == TOOL_CALL:
        return [_dispatched(event.data)]
    if event.type == TOOL_RESULT:
        return [_result(event.data)]
    return []


def replay_updates(events: Iterable[Event], read_only: ReadOnly) -> list[Update]:
    """The whole conversation of a (repaired) log, for session/load."""
    updates: list[Update] = []
    for event in events:
        data = event.data
        if event.type == USER_MESSAGE:
            updates.append(
                UserMessageChunk(
                    session_update="user_message_chunk",
                    content=text_block(data["message"]),
                    message_id=f"t{data['turn']}-user",
                )
            )
        elif event.type == ASSISTANT_MESSAGE:
            text = _text_of(data["message"])
            if text:
                updates.append(
                    AgentMessageChunk(
                        session_update="agent_message_chunk",
                        content=text_block(text),
                        message_id=_message_id(data),
                    )
                )
            updates.extend(_starts(data["message"], read_only))
        else:
            updates.extend(_tool_updates(event))
    return updates
