# The scripted model: replays a scenario's steps as a stream of text chunks
# followed by an assistant message, taking a step's branch when the latest
# batch of tool results in the history it is sent carries the branch's code.
from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Protocol

from faultlab.probe import PROBE
from faultlab.runtime.cancel import CancelToken
from faultlab.runtime.history import Message, latest_tool_results
from faultlab.scenario import Branch, Scenario, Step

__all__ = [
    "Model",
    "ModelRequest",
    "ModelStream",
    "ScriptedModel",
    "Stream",
    "choose_content",
    "tool_errors",
]


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """What the loop sends the model for one step."""

    request_id: str
    turn: int
    step: int
    script_turn: int
    script_step: int
    messages: list[Message]
    tools: tuple[str, ...]
    cancel: CancelToken


class Stream(Protocol):
    """What the loop iterates: text deltas, then `message` holds the full answer
    (None when the stream stopped before the answer was complete)."""

    message: Message | None

    def __aiter__(self) -> AsyncIterator[str]: ...


class Model(Protocol):
    """A model the loop can stream from: the scripted one, or an HTTP client
    (faultlab/runtime/httpagent/client.py)."""

    @property
    def name(self) -> str: ...

    def stream(self, request: ModelRequest) -> Stream: ...


def choose_content(step: Step, messages: list[Message]) -> Step | Branch:
    """The step itself, or its first branch matching the latest tool results."""
    if not step.branches:
        return step
    latest = latest_tool_results(messages)
    for branch in step.branches:
        for result in latest:
            code = (result.get("error") or {}).get("code")
            if code == branch.when and branch.tool in (None, result["name"]):
                return branch
    return step


class ModelStream:
    """Async iterator of text deltas; `message` holds the full answer at the end."""

    def __init__(self, request: ModelRequest, step: Step) -> None:
        self._request = request
        self._step = step
        self._content = choose_content(step, request.messages)
        self.message: Message | None = None

    def __aiter__(self) -> AsyncIterator[str]:
        return self._chunks()

    async def _chunks(self) -> AsyncIterator[str]:
        cancel = self._request.cancel
        if await cancel.sleep(self._step.delay_ms / 1000):
            return
        for index, chunk in enumerate(self._content.chunks):
            if index and await cancel.sleep(self._step.chunk_delay_ms / 1000):
                return
            yield chunk
        self.message = self._final_message()

    def _final_message(self) -> Message:
        blocks: list[dict[str, Any]] = []
        text = self._content.text
        if text:
            blocks.append({"type": "text", "text": text})
        prefix = self._request.request_id.removeprefix("req-")
        for index, call in enumerate(self._content.tool_calls):
            blocks.append(
                {
                    "type": "tool-call",
                    "id": f"call-{prefix}-{index}",
                    "name": call.tool,
                    "arguments": dict(call.arguments),
                }
            )
        return {"role": "assistant", "content": blocks}


class ScriptedModel:
    """A fake model that follows a scenario's script."""

    name = "faultlab-scripted"

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        self.calls = 0

    def stream(self, request: ModelRequest) -> ModelStream:
        steps = self.scenario.turns[request.script_turn].steps
        if request.script_step >= len(steps):
            raise IndexError(
                f"turn {request.script_turn} of the script has no step {request.script_step}"
            )
        self.calls += 1
        if PROBE.enabled:
            # Ground truth for the lab: the error results the model was sent.
            PROBE.fact("model/input", requestId=request.request_id,
                       toolErrors=tool_errors(request.messages))  # fmt: skip
        return ModelStream(request, steps[request.script_step])


def tool_errors(messages: list[Message]) -> list[dict[str, Any]]:
    """Every error tool result in `messages`: call id, code and the exact text."""
    found = []
    for message in messages:
        if message["role"] != "tool":
            continue
        for block in message["content"]:
            error = block.get("error")
            if error:
                code = error.get("code")
                found.append({"callId": block["callId"], "code": code, "content": block["content"]})
    return found
