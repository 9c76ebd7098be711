# The conversation a model is sent, derived from the session log: user
# messages, assistant messages, and the top-level tool results that answer
# them (grouped into one tool message per assistant message, in the model's
# order).  Nested tool calls are the runtime's business and never reach the
# model.  Also the digest that a `request/header` envelope records.
from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

import orjson

from faultlab.runtime.events import ASSISTANT_MESSAGE, TOOL_RESULT, USER_MESSAGE, Event

__all__ = ["Message", "build_messages", "digest", "latest_tool_results", "tool_calls_of"]

Message = dict[str, Any]


def tool_calls_of(message: Message) -> list[dict[str, Any]]:
    """The tool-call blocks of an assistant message, in model order."""
    return [block for block in message.get("content", ()) if block.get("type") == "tool-call"]


def build_messages(events: Iterable[Event]) -> list[Message]:
    messages: list[Message] = []
    for event in events:
        if event.type == USER_MESSAGE:
            messages.append(
                {"role": "user", "content": [{"type": "text", "text": event.data["message"]}]}
            )
        elif event.type == ASSISTANT_MESSAGE:
            messages.append(event.data["message"])
        elif event.type == TOOL_RESULT and "parentCallId" not in event.data:
            block = {
                "type": "tool-result",
                "callId": event.data["callId"],
                "content": event.data["content"],
                "isError": event.data["isError"],
            }
            if "error" in event.data:
                block["error"] = event.data["error"]
            if messages and messages[-1]["role"] == "tool":
                messages[-1]["content"].append(block)
            else:
                messages.append({"role": "tool", "content": [block]})
    return messages


def latest_tool_results(messages: list[Message]) -> list[dict[str, Any]]:
    """Result blocks answering the most recent assistant message that called tools,
    each with the called tool's name under "name"."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message["role"] != "assistant":
            continue
        calls = {block["id"]: block["name"] for block in tool_calls_of(message)}
        if not calls:
            continue
        results: list[dict[str, Any]] = []
        for later in messages[index + 1 :]:
            if later["role"] == "tool":
                for block in later["content"]:
                    if block["callId"] in calls:
                        results.append({**block, "name": calls[block["callId"]]})
        return results
    return []


def digest(messages: list[Message]) -> str:
    """sha256 of the canonical JSON of exactly the messages sent."""
    return hashlib.sha256(orjson.dumps(messages, option=orjson.OPT_SORT_KEYS)).hexdigest()
