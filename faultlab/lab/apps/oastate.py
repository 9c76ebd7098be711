# OpenAI Agents SDK session items (Responses API input items, as a
# `Session` stores them and as a `Model` is sent them) as the lab's History.
# Read by their keys only, so the lab imports this module without the
# optional extra; the child (oachild) uses it for what its scripted model is
# sent and for what the app's own session returns from `get_items()`.
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from faultlab.lab.read.histories import Call, History, Message

__all__ = ["to_history"]


def _field(item: Any, key: str) -> Any:
    if isinstance(item, Mapping):
        return item.get(key)
    return getattr(item, key, None)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        return "".join(str(_field(part, "text") or "") for part in content)
    return ""


def _arguments(raw: Any) -> dict[str, Any]:
    try:
        value = orjson.loads(raw) if isinstance(raw, str | bytes) else raw
    except orjson.JSONDecodeError:
        return {"_raw": str(raw)}
    return dict(value) if isinstance(value, Mapping) else {"_raw": value}


def to_history(items: Sequence[Any]) -> History:
    """User messages, assistant text, function calls and their outputs.  One
    model response is stored as several items (its message, then one
    `function_call` per call): consecutive assistant items are one
    assistant message, as the model produced them."""
    out: list[Message] = []
    open_assistant = False  # the last message is an assistant one still taking items
    for item in items:
        kind, role = _field(item, "type"), _field(item, "role")
        if kind == "function_call":
            call = Call(str(_field(item, "call_id")), str(_field(item, "name")),
                        _arguments(_field(item, "arguments")))  # fmt: skip
            if open_assistant:
                last = out[-1]
                out[-1] = Message("assistant", last.text, (*last.calls, call))
            else:
                out.append(Message("assistant", "", (call,)))
                open_assistant = True
        elif kind == "function_call_output":
            out.append(Message("tool", _text(_field(item, "output")), (),
                               str(_field(item, "call_id"))))  # fmt: skip
            open_assistant = False
        elif role == "assistant":
            text = _text(_field(item, "content"))
            if open_assistant and not out[-1].calls:
                out[-1] = Message("assistant", out[-1].text + text)
            else:
                out.append(Message("assistant", text))
                open_assistant = True
        elif role == "user":
            out.append(Message("user", _text(_field(item, "content"))))
            open_assistant = False
        # system/developer messages, reasoning and other items: not history
    return History(tuple(out))
