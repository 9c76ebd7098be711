# pydantic-ai messages as the lab's History, so the oracle and `inspect`
# work on them.  The conversion reads the messages' public fields (`kind`,
# `parts`, `part_kind`) and needs no pydantic_ai import: the child
# (pachild) uses it for what its scripted model is sent and for what the
# app's own `load_history` finds in its store (the lab reads a store only
# through the app's loader: faultlab/lab/apps/storeread.py).
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from faultlab.lab.read.histories import Call, History, Message

__all__ = ["ERROR_OUTCOMES", "to_history"]

# ToolReturnPart outcomes that reach the model as an error (pydantic-ai's
# own ERROR_OUTCOMES); a RetryPromptPart answering a call is one as well.
ERROR_OUTCOMES = ("failed", "retried")


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list | tuple):
        return "".join(c if isinstance(c, str) else str(c) for c in content)
    return str(content)


def to_history(messages: Sequence[Any]) -> History:
    """pydantic-ai ModelMessages as the lab's normalised History: a request's
    user prompts and tool returns, a response's text and tool calls (system
    prompts, thinking and native-tool parts left out)."""
    out: list[Message] = []
    for m in messages:
        kind = getattr(m, "kind", "")
        if kind == "request":
            for part in m.parts:
                pk = getattr(part, "part_kind", "")
                if pk == "user-prompt":
                    out.append(Message("user", _text(part.content)))
                elif pk == "tool-return":
                    failed = getattr(part, "outcome", "success") in ERROR_OUTCOMES
                    out.append(Message("tool", _text(part.content), (), str(part.tool_call_id),
                                       failed))  # fmt: skip
                elif pk == "retry-prompt" and getattr(part, "tool_name", None):
                    out.append(Message("tool", _text(part.content), (), str(part.tool_call_id),
                                       True))  # fmt: skip
                elif pk == "retry-prompt":
                    out.append(Message("user", _text(part.content)))
        elif kind == "response":
            text = "".join(str(p.content) for p in m.parts if getattr(p, "part_kind", "") == "text")
            calls = tuple(Call(str(p.tool_call_id), str(p.tool_name), dict(p.args_as_dict()))
                          for p in m.parts
                          if getattr(p, "part_kind", "") == "tool-call")  # fmt: skip
            out.append(Message("assistant", text, calls))
    return History(tuple(out))
