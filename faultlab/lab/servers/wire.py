# A scripted answer on each model API's wire: the SSE events of a streamed
# Anthropic Messages, OpenAI Chat Completions or OpenAI Responses answer (and
# Gemini's, servers/gemini.py), or
# its one JSON body.  A stream is a list of pieces, each marked as a chunk
# (one text delta, or one whole tool call) or as framing: the model server
# reports each chunk to the gate before it sends it, so `model/chunk#k`
# names the same place whatever the API.
from __future__ import annotations

import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import orjson

from faultlab.lab.read.naming import BUILT_IN_NAMING, ToolNaming
from faultlab.lab.servers.gemini import gemini_error, render_gemini
from faultlab.lab.servers.script import Answer

__all__ = ["API_PATHS", "CALL_PREFIX", "Api", "Rendered", "declared_tools", "error_body", "render",
           "tool_names"]

Api = Literal["anthropic", "chat", "responses", "gemini"]
API_PATHS: dict[str, Api] = {
    "/v1/messages": "anthropic",
    "/v1/chat/completions": "chat",
    "/v1/responses": "responses",
}
# Call ids in each API's own style.
CALL_PREFIX: dict[Api, str] = {"anthropic": "toolu_", "chat": "call_", "responses": "call_",
                               "gemini": "call_"}  # fmt: skip


@dataclass(frozen=True, slots=True)
class Rendered:
    """A non-streamed body, or the stream's pieces: (is_chunk, bytes)."""

    body: dict[str, Any] | None
    pieces: tuple[tuple[bool, bytes], ...] = ()


_Names = dict[str, tuple[str, str | None]]


def declared_tools(api: Api, body: dict[str, Any]) -> list[tuple[str, str | None]]:
    """Every tool a request offers, as (its name, its namespace), in order."""
    found: list[tuple[Any, str | None]] = []
    for tool in body.get("tools") or ():
        if not isinstance(tool, dict):
            continue
        if api == "chat":
            found.append(((tool.get("function") or {}).get("name"), None))
        elif api == "gemini":
            declared = tool.get("functionDeclarations") or tool.get("function_declarations")
            found += [(d.get("name"), None) for d in declared or () if isinstance(d, dict)]
        elif tool.get("type") == "namespace":
            found += [(inner.get("name"), str(tool.get("name") or ""))
                      for inner in tool.get("tools") or () if isinstance(inner, dict)]  # fmt: skip
        else:
            found.append((tool.get("name"), None))
    return [(name, namespace) for name, namespace in found if isinstance(name, str)]


def tool_names(api: Api, body: dict[str, Any], known: Collection[str],
               naming: ToolNaming = BUILT_IN_NAMING) -> _Names:  # fmt: skip
    """Scenario tool name -> (the name the agent declared, its namespace): an
    answer must call a tool by the agent's name for it (`mcp__faultlab__x` for
    Claude Code, `x` in namespace `mcp__faultlab__` for Codex, what the
    adapter's `tool_name` patterns say for the others)."""
    found: _Names = {}
    for name, namespace in declared_tools(api, body):
        found.setdefault(naming.bare(name, namespace, known), (name, namespace))
    return found


def error_body(api: Api | None, status: int, message: str) -> dict[str, Any]:
    if api == "gemini":
        return gemini_error(status, message)
    kind = "not_found_error" if status == 404 else "invalid_request_error"
    if api == "anthropic":
        return {"type": "error", "error": {"type": kind, "message": message}}
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


def _sse(event: str | None, data: Any) -> bytes:
    head = f"event: {event}\n".encode() if event else b""
    return head + b"data: " + orjson.dumps(data) + b"\n\n"


def render(api: Api, answer: Answer, body: dict[str, Any], *, request_id: str, stream: bool,
           names: _Names, call_ids: Sequence[str]) -> Rendered:  # fmt: skip
    """The answer as `api` sends it; `request_id` makes the message ids,
    `call_ids` are its calls' ids (one per call, in order)."""
    if len(call_ids) != len(answer.calls):
        raise ValueError(f"{len(answer.calls)} call(s) but {len(call_ids)} id(s)")
    model = str(body.get("model") or "faultlab-scripted")
    calls = [(cid, *names.get(c.tool, (c.tool, None)), orjson.dumps(dict(c.arguments)).decode())
             for cid, c in zip(call_ids, answer.calls, strict=True)]  # fmt: skip
    usage_in = max(1, len(orjson.dumps(body)) // 4)
    usage_out = max(1, len(answer.text) // 4 + 12 * len(calls))
    if api == "gemini":
        whole, pieces = render_gemini(answer, calls, model, request_id, stream,
                                      (usage_in, usage_out))  # fmt: skip
        return Rendered(whole, pieces)
    build = {"anthropic": _anthropic, "chat": _chat, "responses": _responses}[api]
    return build(answer, calls, model, request_id, stream, (usage_in, usage_out), body)


_Calls = list[tuple[str, str, str | None, str]]  # (id, wire name, namespace, arguments JSON)


def _anthropic(answer: Answer, calls: _Calls, model: str, rid: str, stream: bool,
               usage: tuple[int, int], body: dict[str, Any]) -> Rendered:  # fmt: skip
    stop = "tool_use" if calls else "end_turn"
    content: list[dict[str, Any]] = [{"type": "text", "text": answer.text}] if answer.text else []
    content += [{"type": "tool_use", "id": cid, "name": name, "input": orjson.loads(args)}
                for cid, name, _, args in calls]  # fmt: skip
    message = {"id": f"msg_{rid}", "type": "message", "role": "assistant", "model": model,
               "content": content, "stop_reason": stop, "stop_sequence": None,
               "usage": {"input_tokens": usage[0], "output_tokens": usage[1]}}  # fmt: skip
    if not stream:
        return Rendered(message)
    start = {**message, "content": [], "stop_reason": None,
             "usage": {"input_tokens": usage[0], "output_tokens": 1}}  # fmt: skip
    pieces = [(False, _sse("message_start", {"type": "message_start", "message": start}))]
    index = 0
    if answer.text:
        pieces.append((False, _sse("content_block_start", {"type": "content_block_start",
                       "index": 0, "content_block": {"type": "text", "text": ""}})))  # fmt: skip
        for chunk in answer.chunks:
            delta = {"type": "text_delta", "text": chunk}
            pieces.append((True, _sse("content_block_delta", {"type": "content_block_delta",
                           "index": 0, "delta": delta})))  # fmt: skip
        pieces.append((False, _sse("content_block_stop", {"type": "content_block_stop",
                                                          "index": 0})))  # fmt: skip
        index = 1
    for offset, (cid, name, _, args) in enumerate(calls):
        i = index + offset
        pieces.append((True, b"".join((
            _sse("content_block_start", {"type": "content_block_start", "index": i,
                 "content_block": {"type": "tool_use", "id": cid, "name": name, "input": {}}}),
            _sse("content_block_delta", {"type": "content_block_delta", "index": i,
                 "delta": {"type": "input_json_delta", "partial_json": args}}),
            _sse("content_block_stop", {"type": "content_block_stop", "index": i}),
        ))))  # fmt: skip
    pieces.append((False, _sse("message_delta", {"type": "message_delta",
                   "delta": {"stop_reason": stop, "stop_sequence": None},
                   "usage": {"output_tokens": usage[1]}})))  # fmt: skip
    pieces.append((False, _sse("message_stop", {"type": "message_stop"})))
    return Rendered(None, tuple(pieces))


def _chat(answer: Answer, calls: _Calls, model: str, rid: str, stream: bool,
          usage: tuple[int, int], body: dict[str, Any]) -> Rendered:  # fmt: skip
    finish = "tool_calls" if calls else "stop"
    wire_calls = [{"id": cid, "type": "function", "function": {"name": name, "arguments": args}}
                  for cid, name, _, args in calls]  # fmt: skip
    counts = {"prompt_tokens": usage[0], "completion_tokens": usage[1],
              "total_tokens": sum(usage)}  # fmt: skip
    head = {"id": f"chatcmpl-{rid}", "created": int(time.time()), "model": model}
    if not stream:
        message: dict[str, Any] = {"role": "assistant", "content": answer.text or None}
        if wire_calls:
            message["tool_calls"] = wire_calls
        return Rendered(
            {
                **head,
                "object": "chat.completion",
                "usage": counts,
                "choices": [
                    {"index": 0, "message": message, "finish_reason": finish, "logprobs": None}
                ],
            }
        )

    def chunk(delta: dict[str, Any], reason: str | None = None) -> bytes:
        return _sse(
            None,
            {
                **head,
                "object": "chat.completion.chunk",
                "choices": [
                    {"index": 0, "delta": delta, "finish_reason": reason, "logprobs": None}
                ],
            },
        )

    pieces = [(False, chunk({"role": "assistant", "content": ""}))]
    pieces += [(True, chunk({"content": text})) for text in answer.chunks if text]
    pieces += [(True, chunk({"tool_calls": [{"index": i, **call}]}))
               for i, call in enumerate(wire_calls)]  # fmt: skip
    pieces.append((False, chunk({}, finish)))
    if (body.get("stream_options") or {}).get("include_usage"):
        pieces.append((False, _sse(None, {**head, "object": "chat.completion.chunk",
                                          "choices": [], "usage": counts})))  # fmt: skip
    pieces.append((False, b"data: [DONE]\n\n"))
    return Rendered(None, tuple(pieces))


def _responses(answer: Answer, calls: _Calls, model: str, rid: str, stream: bool,
               usage: tuple[int, int], body: dict[str, Any]) -> Rendered:  # fmt: skip
    items: list[dict[str, Any]] = []
    message_id = f"msg_{rid}"
    if answer.text:
        items.append(
            {
                "id": message_id,
                "type": "message",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": answer.text, "annotations": []}],
            }
        )
    for cid, name, namespace, args in calls:
        item = {
            "id": f"fc_{cid.removeprefix('call_')}",
            "type": "function_call",
            "status": "completed",
            "call_id": cid,
            "name": name,
            "arguments": args,
        }
        if namespace is not None:
            item["namespace"] = namespace
        items.append(item)
    response: dict[str, Any] = {
        "id": f"resp_{rid}", "object": "response", "created_at": int(time.time()),
        "status": "completed", "model": model, "output": items, "error": None,
        "incomplete_details": None, "parallel_tool_calls": True, "tool_choice": "auto",
        "tools": [], "usage": {"input_tokens": usage[0], "output_tokens": usage[1],
                               "total_tokens": sum(usage),
                               "input_tokens_details": {"cached_tokens": 0},
                               "output_tokens_details": {"reasoning_tokens": 0}},
    }  # fmt: skip
    if not stream:
        return Rendered(response)
    seq = iter(range(1 << 30))

    def event(kind: str, **data: Any) -> bytes:
        return _sse(kind, {"type": kind, "sequence_number": next(seq), **data})

    started = {**response, "status": "in_progress", "output": [], "usage": None}
    pieces = [
        (False, event("response.created", response=started)),
        (False, event("response.in_progress", response=started)),
    ]
    output = 0
    if answer.text:
        where = {"item_id": message_id, "output_index": 0, "content_index": 0}
        part = {"type": "output_text", "text": "", "annotations": []}
        pieces.append((False, event("response.output_item.added", output_index=0,
                       item={**items[0], "status": "in_progress", "content": []})))  # fmt: skip
        pieces.append((False, event("response.content_part.added", **where, part=part)))
        for text in answer.chunks:
            if text:
                pieces.append((True, event("response.output_text.delta", **where, delta=text,
                                           logprobs=[])))  # fmt: skip
        pieces.append((False, b"".join((
            event("response.output_text.done", **where, text=answer.text, logprobs=[]),
            event("response.content_part.done", **where, part={**part, "text": answer.text}),
            event("response.output_item.done", output_index=0, item=items[0])))))  # fmt: skip
        output = 1
    for i, item in enumerate(items[output:], start=output):
        where = {"item_id": item["id"], "output_index": i}
        pieces.append((True, b"".join((
            event("response.output_item.added", output_index=i,
                  item={**item, "status": "in_progress", "arguments": ""}),
            event("response.function_call_arguments.delta", **where, delta=item["arguments"]),
            event("response.function_call_arguments.done", **where, name=item["name"],
                  arguments=item["arguments"]),
            event("response.output_item.done", output_index=i, item=item)))))  # fmt: skip
    pieces.append((False, event("response.completed", response=response)))
    return Rendered(None, tuple(pieces))
