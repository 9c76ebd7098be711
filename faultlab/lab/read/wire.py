# Model API request bodies -> `History`: the conversation an Anthropic
# Messages, OpenAI Chat Completions, OpenAI Responses or Gemini generateContent
# request carried, in the one shape the black-box oracle compares
# (read/histories.py).  It lives
# in the read room so the agents' session-log readers, which store the same
# wire shapes, can reuse it; the model server (servers/) is its first user.
#
# Normalisation: system prompts are left out; an assistant turn is one
# message (consecutive assistant messages, and the Responses API's separate
# message and function_call items, are merged); tool results become `tool`
# messages before the user text that shares their message; tool names are
# reduced to the scenario's bare name (`mcp__faultlab__deploy`, or `deploy`
# in namespace `mcp__faultlab__`, become `deploy`; an adapter's `tool_name`
# patterns, read/naming.py, name the rest, e.g. opencode's `faultlab_deploy`).
from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any

import orjson

from faultlab.lab.read.histories import Call, History, Message
from faultlab.lab.read.naming import BUILT_IN_NAMING, ToolNaming, bare_tool_name

__all__ = [
    "WireError",
    "bare_tool_name",
    "history_from_anthropic",
    "history_from_chat",
    "history_from_gemini",
    "history_from_responses",
]


class WireError(ValueError):
    """A request body does not have its API's shape; the message says where."""


def _arguments(raw: Any, where: str) -> dict[str, Any]:
    """Tool arguments: an object, or a JSON string of one (OpenAI sends strings)."""
    if raw is None or raw == "":
        return {}
    if isinstance(raw, str):
        try:
            raw = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return {"_unparsed": raw}
    if not isinstance(raw, dict):
        raise WireError(f"{where}: tool arguments must be an object, not {type(raw).__name__}")
    return raw


def _text(content: Any, where: str, kinds: Iterable[str] = ("text",)) -> str:
    """The text of a content field: a string, or the text parts of a list."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise WireError(f"{where}: content must be a string or a list, not "
                        f"{type(content).__name__}")  # fmt: skip
    wanted = tuple(kinds)
    parts = [str(p.get("text") or "") for p in content
             if isinstance(p, dict) and p.get("type", wanted[0]) in wanted]  # fmt: skip
    return "\n".join(p for p in parts if p)


def _items(body: Any, key: str) -> list[Any]:
    if not isinstance(body, dict):
        raise WireError(f"the request body must be a JSON object, not {type(body).__name__}")
    items = body.get(key)
    if isinstance(items, str) and key == "input":
        return [{"role": "user", "content": items}]
    if not isinstance(items, list):
        raise WireError(f"`{key}` must be a list")
    return items


class _Builder:
    """Appends messages, merging an assistant message into the previous one."""

    def __init__(self) -> None:
        self.messages: list[Message] = []

    def assistant(self, text: str, calls: Iterable[Call] = ()) -> None:
        calls = tuple(calls)
        if not text and not calls:
            return
        last = self.messages[-1] if self.messages else None
        if last is not None and last.role == "assistant":
            merged = "\n".join(t for t in (last.text, text) if t)
            self.messages[-1] = Message("assistant", merged, last.calls + calls)
        else:
            self.messages.append(Message("assistant", text, calls))

    def user(self, text: str) -> None:
        self.messages.append(Message("user", text))

    def tool(self, call_id: str, text: str, is_error: bool = False) -> None:
        self.messages.append(Message("tool", text, call_id=call_id, is_error=is_error))

    def history(self) -> History:
        return History(tuple(self.messages))


def history_from_anthropic(body: Any, known: Collection[str] = (), *,
                           naming: ToolNaming = BUILT_IN_NAMING) -> History:  # fmt: skip
    """`messages` of an Anthropic Messages request (`system` is not a message)."""
    out = _Builder()
    for index, message in enumerate(_items(body, "messages")):
        where = f"messages[{index}]"
        if not isinstance(message, dict):
            raise WireError(f"{where}: a message must be an object")
        role, content = message.get("role"), message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if not isinstance(blocks, list):
            raise WireError(f"{where}: content must be a string or a list of blocks")
        if role == "assistant":
            texts, calls = [], []
            for block in blocks:
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "text":
                    texts.append(str(block.get("text") or ""))
                elif block.get("type") == "tool_use":
                    calls.append(Call(str(block.get("id")),
                                      naming.bare(str(block.get("name")), known=known),
                                      _arguments(block.get("input"), where)))  # fmt: skip
            out.assistant("".join(texts), calls)
        elif role == "user":
            texts = []
            for block in blocks:
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "tool_result":
                    out.tool(str(block.get("tool_use_id")), _text(block.get("content"), where),
                             bool(block.get("is_error")))  # fmt: skip
                elif block.get("type") == "text" and block.get("text"):
                    texts.append(str(block["text"]))
            if texts:
                out.user("\n".join(texts))
        elif role == "system":
            # Claude Code 2.1 sends system reminders as messages between
            # turns (the beta Messages API takes them): not conversation.
            continue
        else:
            raise WireError(f"{where}: role must be user, assistant or system, not {role!r}")
    return out.history()


def history_from_chat(body: Any, known: Collection[str] = (), *,
                      naming: ToolNaming = BUILT_IN_NAMING) -> History:  # fmt: skip
    """`messages` of an OpenAI Chat Completions request (system and developer
    messages left out)."""
    out = _Builder()
    for index, message in enumerate(_items(body, "messages")):
        where = f"messages[{index}]"
        if not isinstance(message, dict):
            raise WireError(f"{where}: a message must be an object")
        role = message.get("role")
        text = _text(message.get("content"), where)
        if role in ("system", "developer"):
            continue
        if role == "user":
            out.user(text)
        elif role == "assistant":
            calls = []
            for call in message.get("tool_calls") or ():
                if not isinstance(call, dict):
                    raise WireError(f"{where}: a tool call must be an object")
                function = call.get("function") or {}
                calls.append(Call(str(call.get("id")),
                                  naming.bare(str(function.get("name")), known=known),
                                  _arguments(function.get("arguments"), where)))  # fmt: skip
            out.assistant(text, calls)
        elif role == "tool":
            out.tool(str(message.get("tool_call_id")), text)
        else:
            raise WireError(f"{where}: unknown role {role!r}")
    return out.history()


def history_from_responses(body: Any, known: Collection[str] = (), *,
                           naming: ToolNaming = BUILT_IN_NAMING) -> History:  # fmt: skip
    """`input` of an OpenAI Responses request: message, function_call (with
    Codex's `namespace`) and function_call_output items; reasoning and other
    item types are left out, as is `instructions`."""
    out = _Builder()
    for index, item in enumerate(_items(body, "input")):
        where = f"input[{index}]"
        if not isinstance(item, dict):
            raise WireError(f"{where}: an input item must be an object")
        kind = item.get("type", "message")
        if kind == "message":
            role = item.get("role")
            text = _text(item.get("content"), where, ("input_text", "output_text", "text"))
            if role == "user":
                out.user(text)
            elif role == "assistant":
                out.assistant(text)
            elif role not in ("system", "developer"):
                raise WireError(f"{where}: unknown role {role!r}")
        elif kind == "function_call":
            name = naming.bare(str(item.get("name")), item.get("namespace"), known)
            call_id = str(item.get("call_id") or item.get("id"))
            out.assistant("", [Call(call_id, name, _arguments(item.get("arguments"), where))])
        elif kind == "function_call_output":
            output = item.get("output")
            out.tool(str(item.get("call_id")),
                     _text(output, where, ("input_text", "output_text", "text")))  # fmt: skip
    return out.history()


def _gemini_text(value: Any) -> str:
    """A function response's text: its strings, depth first, one a line (a
    tool's output as the agent sent it back, whatever it wraps it in)."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return "\n".join(t for t in (_gemini_text(v) for v in value.values()) if t)
    if isinstance(value, list):
        return "\n".join(t for t in (_gemini_text(v) for v in value) if t)
    return "" if value is None else orjson.dumps(value).decode()


def _part(part: dict[str, Any], camel: str) -> Any:
    """A part's field by its JSON name or the snake_case one."""
    snake = "".join("_" + c.lower() if c.isupper() else c for c in camel)
    return part.get(camel, part.get(snake))


def history_from_gemini(body: Any, known: Collection[str] = (), *,
                        naming: ToolNaming = BUILT_IN_NAMING) -> History:  # fmt: skip
    """`contents` of a Gemini generateContent request: `user` and `model`
    turns of parts (`text`, `functionCall`, `functionResponse`; `thought`
    parts and `systemInstruction` left out).  A call without an `id` gets
    one from its place (`gemini-C-P`); a response without one answers the
    earliest unanswered call of its name (Gemini pairs them by order)."""
    out = _Builder()
    pending: list[Call] = []  # calls of the latest model turn not answered yet
    for index, content in enumerate(_items(body, "contents")):
        where = f"contents[{index}]"
        if not isinstance(content, dict):
            raise WireError(f"{where}: a content must be an object")
        parts = content.get("parts") or []
        if not isinstance(parts, list):
            raise WireError(f"{where}: parts must be a list")
        role = content.get("role", "user")
        texts: list[str] = []
        calls: list[Call] = []
        for number, part in enumerate(parts):
            if not isinstance(part, dict) or part.get("thought"):
                continue
            call, answer = _part(part, "functionCall"), _part(part, "functionResponse")
            if isinstance(call, dict):
                name = naming.bare(str(call.get("name")), known=known)
                calls.append(Call(str(call.get("id") or f"gemini-{index}-{number}"), name,
                                  _arguments(call.get("args"), where)))  # fmt: skip
            elif isinstance(answer, dict):
                name = naming.bare(str(answer.get("name")), known=known)
                match = next((c for c in pending if c.id == answer.get("id")), None) or next(
                    (c for c in pending if c.name == name and not answer.get("id")), None)
                if match is not None:
                    pending.remove(match)
                response = answer.get("response")
                error = isinstance(response, dict) and "error" in response and (
                    "output" not in response)  # fmt: skip
                out.tool(str(answer.get("id") or (match.id if match else f"gemini-{index}")),
                         _gemini_text(response), error)  # fmt: skip
            elif isinstance(part.get("text"), str):
                texts.append(part["text"])
        if role == "model":
            out.assistant("".join(texts), calls)
            pending = list(calls)
        elif role == "user":
            if texts:
                out.user("\n".join(texts))
        else:
            raise WireError(f"{where}: role must be user or model, not {role!r}")
    return out.history()
