# Conversations as a model API receives them, in one shape whatever the
# wire (Anthropic Messages, OpenAI Chat Completions, OpenAI Responses): the
# black-box oracle's ground truth is the history each model request carried,
# normalised to these values by the model server (faultlab/lab/servers/).
# Also the model APIs' pairing rules: what a provider rejects with a 400.
from __future__ import annotations

import hashlib
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

__all__ = [
    "OUTCOME_UNKNOWN_WORDS",
    "Call",
    "History",
    "Message",
    "ResultClass",
    "classify_result",
    "pairing_problems",
]

Role = Literal["user", "assistant", "tool"]
# How a tool result presents an interrupted call to the model.
ResultClass = Literal["success", "error", "not-started", "aborted", "unknown"]
# Words by which a result says the outcome is unknown (checked lower-cased):
# the reference runtime's TOOL_OUTCOME_UNKNOWN guidance and its paraphrases.
OUTCOME_UNKNOWN_WORDS = ("outcome is unknown", "outcome unknown", "may have", "might have",
                         "verify", "tool_outcome_unknown")  # fmt: skip
_NOT_STARTED_WORDS = ("not started", "was not run", "never ran", "tool_not_started", "not run")
_ABORTED_WORDS = ("aborted", "interrupted", "cancelled", "canceled")


@dataclass(frozen=True, slots=True)
class Call:
    """A tool call the assistant made: its id on the wire, the scenario tool
    name (prefixes such as `mcp__server__` stripped) and its arguments."""

    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Message:
    """One message of a history.  `user` and `assistant` carry text (an
    assistant message also its calls); `tool` answers call `call_id`."""

    role: Role
    text: str = ""
    calls: tuple[Call, ...] = ()
    call_id: str | None = None
    is_error: bool = False

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"role": self.role, "text": self.text}
        if self.calls:
            data["calls"] = [{"id": c.id, "name": c.name, "arguments": c.arguments}
                             for c in self.calls]  # fmt: skip
        if self.call_id is not None:
            data["callId"] = self.call_id
        if self.is_error:
            data["isError"] = True
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Message:
        calls = tuple(Call(str(c["id"]), str(c["name"]), dict(c.get("arguments") or {}))
                      for c in data.get("calls") or ())  # fmt: skip
        return cls(data["role"], str(data.get("text") or ""), calls, data.get("callId"),
                   bool(data.get("isError")))  # fmt: skip


@dataclass(frozen=True, slots=True)
class History:
    """The messages one model request carried (the system prompt left out)."""

    messages: tuple[Message, ...]

    def to_json(self) -> list[dict[str, Any]]:
        return [m.to_json() for m in self.messages]

    @classmethod
    def from_json(cls, data: Sequence[dict[str, Any]]) -> History:
        return cls(tuple(Message.from_json(m) for m in data))

    def digest(self) -> str:
        """A stable digest of the normalised history (not of the wire bytes)."""
        raw = orjson.dumps(self.to_json(), option=orjson.OPT_SORT_KEYS)
        return hashlib.sha256(raw).hexdigest()[:16]

    def calls(self) -> list[Call]:
        return [c for m in self.messages if m.role == "assistant" for c in m.calls]

    def results(self) -> dict[str, Message]:
        """The tool result answering each call id (the first one)."""
        found: dict[str, Message] = {}
        for m in self.messages:
            if m.role == "tool" and m.call_id is not None:
                found.setdefault(m.call_id, m)
        return found

    def user_texts(self) -> list[str]:
        return [m.text for m in self.messages if m.role == "user"]


def classify_result(result: Message | None) -> ResultClass | None:
    """How a tool result presents its call to the model; None: no result."""
    if result is None:
        return None
    text = result.text.lower()
    if any(w in text for w in OUTCOME_UNKNOWN_WORDS):
        return "unknown"
    if any(w in text for w in _NOT_STARTED_WORDS):
        return "not-started"
    if any(w in text for w in _ABORTED_WORDS):
        return "aborted"
    return "error" if result.is_error else "success"


def pairing_problems(history: History, *, reissued: Collection[str] = ()) -> list[str]:
    """What a model API rejects: a tool call not answered before the next
    assistant or user message, a call id answered twice or used twice, a
    result answering no call.  Empty when the history is valid.

    `reissued`: call ids the model server itself handed out in more than one
    answer.  An agent that keeps such an id twice only repeats what it was
    given: that reuse is the server's doing, not a problem of the history
    (faultlab's server hands out fresh ids, so this guards its own bugs)."""
    problems: list[str] = []
    seen: set[str] = set()
    open_calls: list[str] = []
    answered: set[str] = set()
    for index, m in enumerate(history.messages):
        if m.role == "tool":
            if m.call_id not in seen:
                problems.append(f"message {index}: a tool result for {m.call_id}, which no "
                                "earlier assistant message called")  # fmt: skip
            elif m.call_id in answered:
                problems.append(f"message {index}: call {m.call_id} answered twice")
            else:
                answered.add(m.call_id)
                if m.call_id in open_calls:
                    open_calls.remove(m.call_id)
            continue
        if open_calls:
            problems.append(f"message {index} ({m.role}): call(s) {', '.join(open_calls)} "
                            "left unanswered before it")  # fmt: skip
            open_calls = []
        for call in m.calls:
            if call.id in seen and call.id in reissued:
                answered.discard(call.id)  # a new call under the server's old id: answer it anew
            elif call.id in seen:
                problems.append(f"message {index}: call id {call.id} used twice")
            seen.add(call.id)
            open_calls.append(call.id)
    return problems
