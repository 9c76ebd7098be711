# An adapter's `tool_name` patterns (read/naming.py), shared by the wire
# reader and the scripted model server: the server answers with the name the
# agent offered (opencode `faultlab_deploy`, Gemini CLI
# `mcp_faultlab_deploy`), reads it back as the scenario's tool, and notes an
# answer that calls a tool its request did not offer; bad patterns and
# adapter fields fail with one line.
from __future__ import annotations

import http.client
from typing import Any
from urllib.parse import urlsplit

import orjson
import pytest

from faultlab.lab.agents import parse_adapter
from faultlab.lab.errors import LabUsageError
from faultlab.lab.read.naming import ToolNaming
from faultlab.lab.read.wire import history_from_chat
from faultlab.lab.servers import Gate, ModelServer
from faultlab.lab.servers.model import TOOL_NOT_OFFERED
from faultlab.lab.servers.rig import tool_note
from faultlab.scenario import load_scenario
from tests.conftest import SCENARIOS

SCENARIO = load_scenario(SCENARIOS / "deploy-careful.toml")
KNOWN = SCENARIO.tool_names
ARGS = {"service": "api", "version": 2}


def chat(url: str, body: dict[str, Any]) -> dict[str, Any]:
    conn = http.client.HTTPConnection(urlsplit(url).netloc, timeout=10)
    try:
        conn.request("POST", urlsplit(url).path + "/v1/chat/completions", orjson.dumps(body),
                     {"content-type": "application/json"})  # fmt: skip
        response = conn.getresponse()
        assert response.status == 200
        return dict(orjson.loads(response.read()))
    finally:
        conn.close()


def offering(*names: str) -> list[dict[str, Any]]:
    return [{"type": "function", "function": {"name": n, "parameters": {}}} for n in names]


def first(tools: list[dict[str, Any]]) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": "Deploy api v2."}],
            "tools": tools}  # fmt: skip


def called(answer: dict[str, Any]) -> list[str]:
    return [c["function"]["name"] for c in answer["choices"][0]["message"].get("tool_calls", [])]


def facts(gate: Gate, name: str) -> list[dict[str, Any]]:
    return [dict(r) for r in gate.snapshot() if r.get("fact") == name]


@pytest.mark.parametrize(("patterns", "offered"), [
    (("{mcp_server}_{tool}",), "faultlab_deploy"),  # opencode
    (("mcp_{mcp_server}_{tool}", "{mcp_server}_{tool}"), "mcp_faultlab_deploy"),  # Gemini CLI
])  # fmt: skip
def test_the_server_answers_with_the_name_the_agent_offered(patterns: tuple[str, ...],
                                                            offered: str) -> None:  # fmt: skip
    gate = Gate()
    naming = ToolNaming(patterns)
    with ModelServer(SCENARIO, gate, naming=naming) as server:
        body = first(offering("read", offered, "faultlab_deploy_status"))
        answer = chat(server.url, body)
        assert called(answer) == [offered]
        call = answer["choices"][0]["message"]["tool_calls"][0]
        # Sent back with its result, the call is the scenario's `deploy`: the
        # script moves on to its second step.
        body["messages"] += [answer["choices"][0]["message"],
                             {"role": "tool", "tool_call_id": call["id"], "content": "deployed"}]
        assert chat(server.url, body)["choices"][0]["message"]["content"] == "api v2 is deployed."
    requests = [r for r in gate.snapshot() if r.get("boundary") == "model/request"]
    assert [r["step"] for r in requests] == [0, 1]
    assert requests[1]["history"][1]["calls"][0]["name"] == "deploy"
    assert facts(gate, TOOL_NOT_OFFERED) == []


def test_without_the_pattern_the_answer_is_noted_as_not_offered() -> None:
    """What the issue saw: the built-in rule cannot read `faultlab_deploy`,
    so the script's `deploy` is not among the offered tools; the server
    says so in a fact and the case's note names the cure."""
    gate = Gate()
    with ModelServer(SCENARIO, gate) as server:
        assert called(chat(server.url, first(offering("read", "faultlab_deploy")))) == ["deploy"]
    notes = facts(gate, TOOL_NOT_OFFERED)
    assert [(n["request"], n["tools"], n["offered"]) for n in notes] == [
        (1, ["deploy"], ["read", "faultlab_deploy"])]
    note = tool_note(gate.snapshot())
    assert "called deploy, which model request 1 did not offer" in note
    assert "read, faultlab_deploy" in note and "`tool_name`" in note


def test_a_request_before_the_agent_registered_its_mcp_tools_is_noted() -> None:
    # Qwen Code's first request offered only its own tools; the answer still
    # uses the adapter's name for the tool (the agent's registry has it later).
    gate = Gate()
    with ModelServer(SCENARIO, gate, naming=ToolNaming(("{mcp_server}_{tool}",))) as server:
        assert called(chat(server.url, first(offering("read_file")))) == ["faultlab_deploy"]
    assert facts(gate, TOOL_NOT_OFFERED)[0]["offered"] == ["read_file"]


def test_the_wire_reader_uses_the_same_rule() -> None:
    body = {"messages": [{"role": "user", "content": "x"}, {"role": "assistant", "tool_calls": [
        {"id": "c1", "function": {"name": "faultlab_deploy", "arguments": "{}"}}]}]}
    named = history_from_chat(body, KNOWN, naming=ToolNaming(("{mcp_server}_{tool}",)))
    assert named.messages[1].calls[0].name == "deploy"
    # Without the pattern the name stays the agent's (and matches no step).
    assert history_from_chat(body, KNOWN).messages[1].calls[0].name == "faultlab_deploy"
    # A pattern that does not give a known tool falls back to the built-in rule.
    assert ToolNaming(("x_{tool}",)).bare("mcp__faultlab__deploy", None, KNOWN) == "deploy"
    assert ToolNaming(("{mcp_server}_{tool}",)).wire("deploy") == "faultlab_deploy"


@pytest.mark.parametrize(("value", "why"), [
    ('"faultlab_deploy"', "must hold {tool} exactly once"),
    ('"{tool}_{tool}"', "must hold {tool} exactly once"),
    ('"{server}_{tool}"', "unknown variable {server}"),
    ("3", "must be a pattern"),
])  # fmt: skip
def test_a_bad_tool_name_field_is_one_line(value: str, why: str) -> None:
    text = f'''name = "toy"
version = "1"
api = "chat"
tool_name = {value}
first = ["{{python}}"]
resume = ["{{python}}"]
[install]
kind = "builtin"
binary = "{{python}}"
[session]
glob = "{{home}}/s.json"
reader = "codex"
'''
    with pytest.raises(LabUsageError) as caught:
        parse_adapter(text, source="toy.toml")
    assert str(caught.value).startswith("toy.toml:4: field 'tool_name': ")
    assert why in str(caught.value)
    good = parse_adapter(text.replace(f"tool_name = {value}",
                                      'tool_name = ["{mcp_server}_{tool}", "{tool}"]'))  # fmt: skip
    assert good.tool_name == ("{mcp_server}_{tool}", "{tool}")

