# A pydantic-ai app's persisted message history, read with the framework's
# own serializer (`ModelMessagesTypeAdapter`) into the lab's History, so the
# oracle and `inspect` work on it.  pydantic_ai is imported inside the
# reader, so the lab imports this module without the optional extra; the
# conversion itself reads the messages' public fields (`kind`, `parts`,
# `part_kind`) and needs no import, which lets the child (pachild) use it
# for what its scripted model is sent.
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from faultlab.lab.apps.lgstate import PersistedThread
from faultlab.lab.errors import LabUsageError
from faultlab.lab.read.histories import Call, History, Message
from faultlab.userfiles import read_target

__all__ = ["ERROR_OUTCOMES", "read_history", "to_history"]

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


def read_history(path: Path) -> PersistedThread:
    """The history stored at `path` (pydantic-ai's JSON of a message list);
    empty when there is none.  A file the serializer refuses (a torn write)
    reads as empty too, with `damaged` set in `pending` so the reading says
    so: that is what a resuming app finds."""
    try:
        from pydantic_ai.messages import ModelMessagesTypeAdapter
    except ImportError:
        raise LabUsageError("reading pydantic-ai histories needs faultlab[pydantic-ai]") from None
    empty = History(())
    raw = read_target(path, what="history store")  # bounded, regular, no link
    if raw is None:
        return PersistedThread(empty, (), (), (), empty)
    try:
        messages = ModelMessagesTypeAdapter.validate_json(raw) if raw.strip() else []
    except ValueError as error:  # pydantic's ValidationError is a ValueError
        note = ("damaged", str(error).splitlines()[0][:200])
        return PersistedThread(empty, (note,), (), (), empty)
    return PersistedThread(to_history(messages), (), ((len(messages), path.name),), (), empty)
