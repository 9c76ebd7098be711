# Model API request bodies -> History: each API's message shapes, merged
# assistant turns, tool results, and tool names reduced to the scenario's.
from __future__ import annotations

import pytest

from faultlab.lab.read.histories import Call, History, Message, pairing_problems
from faultlab.lab.read.wire import (
    WireError,
    bare_tool_name,
    history_from_anthropic,
    history_from_chat,
    history_from_responses,
)

KNOWN = ("deploy", "deploy_status")
EXPECTED = History((
    Message("user", "Deploy api v2."),
    Message("assistant", "Deploying.", (Call("c1", "deploy", {"service": "api"}),
                                        Call("c2", "deploy_status", {}))),
    Message("tool", "TOOL_OUTCOME_UNKNOWN", call_id="c1", is_error=True),
    Message("tool", "up", call_id="c2"),
    Message("user", "Continue."),
))  # fmt: skip


def test_anthropic_blocks() -> None:
    body = {"system": "be brief", "messages": [
        {"role": "user", "content": [{"type": "text", "text": "Deploy api v2."}]},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "hm", "signature": "s"},
            {"type": "text", "text": "Deploying."},
            {"type": "tool_use", "id": "c1", "name": "mcp__faultlab__deploy",
             "input": {"service": "api"}}]},
        # A second assistant message is the same turn (agents split them).
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "c2", "name": "mcp__faultlab__deploy_status",
             "input": {}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "c1", "is_error": True,
             "content": [{"type": "text", "text": "TOOL_OUTCOME_UNKNOWN"}]},
            {"type": "tool_result", "tool_use_id": "c2", "content": "up"},
            {"type": "text", "text": "Continue."}]}]}  # fmt: skip
    history = history_from_anthropic(body, KNOWN)
    assert history == EXPECTED
    assert pairing_problems(history) == []


def test_chat_roles() -> None:
    body = {"messages": [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "Deploy api v2."},
        {"role": "assistant", "content": "Deploying.", "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "deploy", "arguments": '{"service": "api"}'}},
            {"id": "c2", "type": "function",
             "function": {"name": "deploy_status", "arguments": ""}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "TOOL_OUTCOME_UNKNOWN"},
        {"role": "tool", "tool_call_id": "c2", "content": [{"type": "text", "text": "up"}]},
        {"role": "user", "content": [{"type": "text", "text": "Continue."}]}]}  # fmt: skip
    history = history_from_chat(body, KNOWN)
    # Chat Completions has no error flag on a tool message.
    assert history.messages[2] == Message("tool", "TOOL_OUTCOME_UNKNOWN", call_id="c1")
    assert (
        history.messages[:2] + history.messages[3:] == EXPECTED.messages[:2] + EXPECTED.messages[3:]
    )


def test_responses_items_with_namespaced_calls() -> None:
    body = {"instructions": "be brief", "input": [
        {"type": "message", "role": "developer", "content": "rules"},
        {"role": "user", "content": [{"type": "input_text", "text": "Deploy api v2."}]},
        {"type": "reasoning", "summary": []},
        {"type": "message", "role": "assistant",
         "content": [{"type": "output_text", "text": "Deploying."}]},
        {"type": "function_call", "call_id": "c1", "namespace": "mcp__faultlab__",
         "name": "deploy", "arguments": '{"service": "api"}'},
        {"type": "function_call", "call_id": "c2", "name": "mcp__faultlab__deploy_status",
         "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "TOOL_OUTCOME_UNKNOWN"},
        {"type": "function_call_output", "call_id": "c2",
         "output": [{"type": "input_text", "text": "up"}]},
        {"type": "message", "role": "user", "content": "Continue."}]}  # fmt: skip
    history = history_from_responses(body, KNOWN)
    assert history.messages[2] == Message("tool", "TOOL_OUTCOME_UNKNOWN", call_id="c1")
    assert history.messages[1] == EXPECTED.messages[1]
    assert [m.role for m in history.messages] == ["user", "assistant", "tool", "tool", "user"]
    assert history_from_responses({"input": "hi"}) == History((Message("user", "hi"),))


@pytest.mark.parametrize(("name", "namespace", "known", "bare"), [
    ("mcp__faultlab__deploy", None, KNOWN, "deploy"),
    ("mcp__faultlab__deploy_status", None, (), "deploy_status"),
    ("deploy", "mcp__faultlab__", KNOWN, "deploy"),
    ("mcp__faultlab__deploy", "mcp__faultlab", (), "deploy"),
    ("plain", None, KNOWN, "plain"),
])  # fmt: skip
def test_bare_tool_name(name: str, namespace: str | None, known: tuple[str, ...],
                        bare: str) -> None:  # fmt: skip
    assert bare_tool_name(name, namespace, known) == bare


@pytest.mark.parametrize(("parse", "body", "words"), [
    (history_from_anthropic, [], "JSON object"),
    (history_from_anthropic, {"messages": {}}, "`messages` must be a list"),
    (history_from_anthropic, {"messages": [{"role": "developer", "content": "x"}]}, "role"),
    (history_from_chat, {"messages": [{"role": "assistant", "tool_calls": ["x"]}]}, "tool call"),
    (history_from_responses, {"input": 3}, "`input` must be a list"),
])  # fmt: skip
def test_bad_shapes_say_where(parse: object, body: object, words: str) -> None:
    with pytest.raises(WireError, match=words):
        parse(body)  # type: ignore[operator]
