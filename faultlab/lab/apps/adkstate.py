# Google ADK contents (`google.genai` `Content`s as JSON: what an ADK
# session's events carry and what an `LlmRequest` sends a model) as the
# lab's History.  Read by their keys only, so the lab imports this module
# without the optional extra; the child (adkchild) uses it for what its
# scripted model is sent and for the events the app's own SessionService
# returns from `get_session`.
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from faultlab.lab.read.histories import Call, History, Message

__all__ = ["response_text", "to_history"]


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
