# The HTTP model client of the black-box agent: the Anthropic Messages API,
# streamed (SSE).  It owns the translation between the runtime's history
# (faultlab/runtime/history.py: user, assistant with tool-call blocks, tool
# messages with tool-result blocks) and the wire format (tool_use /
# tool_result blocks, consecutive same-role messages merged), and the parse of
# the event stream into text deltas and one final assistant message.  HTTP is
# `httpx2`, the client the `mcp` SDK itself depends on (no extra dependency).
from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

import httpx2
import orjson

from faultlab.runtime.history import Message
from faultlab.runtime.model import ModelRequest

__all__ = ["AnthropicModel", "ModelError", "ToolDefinition", "to_anthropic"]

API_VERSION = "2023-06-01"
MAX_TOKENS = 4096


class ModelError(Exception):
    """The model endpoint refused the request or broke off its stream."""


@dataclass(frozen=True, slots=True)
class ToolDefinition:
    """One tool as the model is offered it."""

    name: str
    description: str
    input_schema: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": self.input_schema,
        }


def _wire_block(block: dict[str, Any]) -> dict[str, Any]:
    kind = block["type"]
    if kind == "text":
        return {"type": "text", "text": block["text"]}
    if kind == "tool-call":
        return {
            "type": "tool_use",
            "id": block["id"],
            "name": block["name"],
            "input": block["arguments"],
        }
    if kind == "tool-result":
        # The content is the model-visible text: for a repaired call it is the
        # repair's guidance (outcome unknown, verify before retrying).
        return {
            "type": "tool_result",
            "tool_use_id": block["callId"],
            "content": block["content"],
            "is_error": bool(block["isError"]),
        }
    raise ValueError(f"unknown history block type {kind!r}")


def to_anthropic(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """The runtime history as Anthropic `messages`: tool results travel in user
    messages, and consecutive messages of one role are merged (a resumed turn's
    prompt follows the repaired results of the interrupted one)."""
    wire: list[dict[str, Any]] = []
    for message in messages:
        role = "assistant" if message["role"] == "assistant" else "user"
        blocks = [_wire_block(block) for block in message["content"]]
        if not blocks:
            continue
        if wire and wire[-1]["role"] == role:
            wire[-1]["content"].extend(blocks)
        else:
            wire.append({"role": role, "content": blocks})
    return wire


class AnthropicStream:
    """One streamed answer: text deltas, then `message` (the runtime's shape)."""

    def __init__(self, model: AnthropicModel, request: ModelRequest) -> None:
        self._model = model
        self._request = request
        self.message: Message | None = None

    def __aiter__(self) -> AsyncIterator[str]:
        return self._deltas()

    async def _deltas(self) -> AsyncIterator[str]:
        body = {
            "model": self._model.name,
            "max_tokens": MAX_TOKENS,
            "stream": True,
            "messages": to_anthropic(self._request.messages),
            "tools": [tool.to_json() for tool in self._model.tools],
        }
        blocks: dict[int, dict[str, Any]] = {}
        done = False
        try:
            async with self._model.http.stream(
                "POST", self._model.url, content=orjson.dumps(body), headers=self._model.headers
            ) as response:
                if response.status_code != 200:
                    text = (await response.aread()).decode("utf-8", "replace")
                    raise ModelError(f"HTTP {response.status_code} from {self._model.url}: "
                                     f"{text[:300]}")  # fmt: skip
                async for line in response.aiter_lines():
                    if not line.startswith("data:"):
                        continue
                    event = orjson.loads(line[5:].strip() or b"{}")
                    kind = event.get("type")
                    if kind == "content_block_start":
                        blocks[int(event["index"])] = dict(event["content_block"], partial="")
                    elif kind == "content_block_delta":
                        block = blocks[int(event["index"])]
                        delta = event["delta"]
                        if delta.get("type") == "text_delta":
                            block["text"] = block.get("text", "") + delta["text"]
                            yield delta["text"]
                        elif delta.get("type") == "input_json_delta":
                            block["partial"] += delta["partial_json"]
                    elif kind == "error":
                        raise ModelError(f"model stream error: {event.get('error')}")
                    elif kind == "message_stop":
                        done = True
                        break
        except httpx2.HTTPError as exc:
            raise ModelError(f"model request to {self._model.url} failed: {exc}") from exc
        if not done:
            raise ModelError(f"model stream from {self._model.url} ended before message_stop")
        self.message = _final_message([blocks[index] for index in sorted(blocks)])


def _final_message(blocks: list[dict[str, Any]]) -> Message:
    # The reference shape: at most one text block, first, then the calls in order.
    text = "".join(block.get("text", "") for block in blocks if block["type"] == "text")
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    for block in blocks:
        if block["type"] != "tool_use":
            continue
        partial = block["partial"]
        arguments = orjson.loads(partial) if partial else dict(block.get("input") or {})
        content.append(
            {"type": "tool-call", "id": block["id"], "name": block["name"], "arguments": arguments}
        )
    return {"role": "assistant", "content": content}


class AnthropicModel:
    """A model behind `base_url` speaking the Anthropic Messages API."""

    def __init__(
        self,
        *,
        base_url: str,
        name: str,
        tools: Sequence[ToolDefinition],
        http: httpx2.AsyncClient,
        api_key: str = "faultlab",
    ) -> None:
        self.url = base_url.rstrip("/") + "/v1/messages"
        self._name = name
        self.tools = tuple(tools)
        self.http = http
        self.headers = {
            "content-type": "application/json",
            "accept": "text/event-stream",
            "anthropic-version": API_VERSION,
            "x-api-key": api_key,
        }

    @property
    def name(self) -> str:
        return self._name

    def stream(self, request: ModelRequest) -> AnthropicStream:
        return AnthropicStream(self, request)
