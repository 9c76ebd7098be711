# The Gemini wire of the scripted model server, driven by the real
# `google-genai` client (the test extra) pointed at it: generateContent and
# streamGenerateContent (SSE), function calls under the agent's own names
# and fresh ids, function responses read back into the same history (and
# digest) the other wires give, the careful branch on an unknown outcome, a
# stream cut at a chunk, countTokens, and Gemini-shaped errors.
from __future__ import annotations

import http.client
import threading
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import orjson
import pytest

from faultlab.lab.read.histories import Call, History, Message
from faultlab.lab.read.naming import ToolNaming
from faultlab.lab.read.wire import history_from_chat, history_from_gemini
from faultlab.lab.servers import Gate, KillPoint, ModelServer
from faultlab.scenario import load_scenario
from tests.conftest import SCENARIOS

genai = pytest.importorskip("google.genai", reason="the test extra installs google-genai")
types = genai.types

SCENARIO = load_scenario(SCENARIOS / "deploy-careful.toml")
GEMINI_CLI = ToolNaming(("mcp_{mcp_server}_{tool}",))  # Gemini CLI's names for MCP tools
MODEL = "gemini-2.5-flash"
PROMPT = "Deploy api v2."
ARGS = {"service": "api", "version": 2}


def client(server: ModelServer) -> Any:
    return genai.Client(api_key=server.key, http_options=types.HttpOptions(
        base_url=server.url, api_version="v1beta",
        retry_options=types.HttpRetryOptions(attempts=1)))  # fmt: skip


CONFIG = types.GenerateContentConfig(
    tools=[types.Tool(function_declarations=[
        types.FunctionDeclaration(name=f"mcp_faultlab_{t}",
                                  parameters_json_schema={"type": "object"})
        for t in ("deploy", "deploy_status")])],
    automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
)  # fmt: skip


@pytest.fixture
def served() -> Iterator[tuple[ModelServer, Gate]]:
    gate = Gate()
    with ModelServer(SCENARIO, gate, naming=GEMINI_CLI) as server:
        yield server, gate


def requests(gate: Gate) -> list[dict[str, Any]]:
    return [dict(r) for r in gate.snapshot() if r.get("boundary") == "model/request"]


def answered(call: Any, output: str, said: Any = None) -> list[Any]:
    """The first turn, the model's turn (`said`, or the call alone), and the
    agent's function response."""
    return [types.Content(role="user", parts=[types.Part(text=PROMPT)]),
            said or types.Content(role="model", parts=[types.Part(function_call=call)]),
            types.Content(role="user", parts=[types.Part(function_response=types.FunctionResponse(
                id=call.id, name=call.name, response={"output": output}))])]  # fmt: skip


def test_whole_then_streamed_answers_through_the_real_client(
        served: tuple[ModelServer, Gate]) -> None:  # fmt: skip
    server, gate = served
    gemini_client = client(server)  # kept: a client that is collected closes its connection
    first = gemini_client.models.generate_content(model=MODEL, contents=PROMPT, config=CONFIG)
    assert first.text is None or first.text == "Deploying api v2."
    (call,) = first.function_calls
    assert (call.name, call.args) == ("mcp_faultlab_deploy", ARGS)
    assert call.id == "call_fl1s0c0"  # the server's fresh id (answer 1, step 0)
    chunks = list(gemini_client.models.generate_content_stream(
        model=MODEL, contents=answered(call, "deployed", first.candidates[0].content),
        config=CONFIG))  # fmt: skip
    assert "".join(c.text or "" for c in chunks) == "api v2 is deployed."
    assert chunks[-1].candidates[0].finish_reason == types.FinishReason.STOP
    seen = requests(gate)
    assert [(r["api"], r["step"], r["stream"]) for r in seen] == [("gemini", 0, False),
                                                                  ("gemini", 1, True)]  # fmt: skip
    assert seen[1]["path"] == f"/v1beta/models/{MODEL}:streamGenerateContent?alt=sse"
    # The same conversation on the Chat wire is the same history, the same digest.
    chat = history_from_chat({"messages": [
        {"role": "user", "content": PROMPT},
        {"role": "assistant", "content": "Deploying api v2.", "tool_calls": [{
            "id": call.id, "function": {"name": "deploy",
                                        "arguments": orjson.dumps(ARGS).decode()}}]},
        {"role": "tool", "tool_call_id": call.id, "content": "deployed"}]}, SCENARIO.tool_names)
    gemini = History.from_json(seen[1]["history"])
    assert gemini == chat and gemini.digest() == chat.digest() == seen[1]["digest"]
    chunk_count = [r for r in gate.snapshot() if r.get("boundary") == "model/chunk"]
    assert len(chunk_count) == len(SCENARIO.turns[0].steps[1].chunks)
    assert not [r for r in gate.snapshot() if r.get("fact") == "model/tool-not-offered"]


def test_an_unknown_outcome_takes_the_careful_branch(served: tuple[ModelServer, Gate]) -> None:
    server, gate = served
    call = types.FunctionCall(id="call_x", name="mcp_faultlab_deploy", args=ARGS)
    contents = answered(call, "TOOL_OUTCOME_UNKNOWN: the agent was killed; verify first")
    gemini_client = client(server)
    answer = gemini_client.models.generate_content(model=MODEL, contents=contents, config=CONFIG)
    assert [(c.name, c.args) for c in answer.function_calls] == [
        ("mcp_faultlab_deploy_status", {"service": "api"})]
    assert (requests(gate)[0]["step"], requests(gate)[0]["branch"]) == (1, "TOOL_OUTCOME_UNKNOWN")


def test_a_function_response_without_an_id_answers_the_call_of_its_name() -> None:
    body = {"contents": [
        {"role": "user", "parts": [{"text": PROMPT}]},
        {"role": "model", "parts": [{"text": "Deploying."}, {"thought": True, "text": "hm"},
                                    {"functionCall": {"name": "mcp_faultlab_deploy",
                                                      "args": ARGS}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "mcp_faultlab_deploy",
                                                         "response": {"error": "boom"}}}]},
    ]}  # fmt: skip
    history = history_from_gemini(body, SCENARIO.tool_names, naming=GEMINI_CLI)
    assert history.messages == (
        Message("user", PROMPT),
        Message("assistant", "Deploying.", (Call("gemini-1-2", "deploy", ARGS),)),
        Message("tool", "boom", call_id="gemini-1-2", is_error=True),
    )


def post(server: ModelServer, path: str, body: Any) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection(urlsplit(server.url).netloc, timeout=10)
    try:
        conn.request("POST", urlsplit(server.url).path + path, orjson.dumps(body),
                     {"content-type": "application/json"})  # fmt: skip
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def test_count_tokens_and_errors_are_geminis(served: tuple[ModelServer, Gate]) -> None:
    server, gate = served
    status, raw = post(server, f"/v1beta/models/{MODEL}:countTokens",
                       {"contents": [{"parts": [{"text": PROMPT}]}]})  # fmt: skip
    assert status == 200 and orjson.loads(raw)["totalTokens"] >= 1
    status, raw = post(server, f"/v1beta/models/{MODEL}:generateContent",
                       {"contents": [{"role": "robot", "parts": [{"text": "x"}]}]})  # fmt: skip
    error = orjson.loads(raw)["error"]
    assert status == 400 and error["status"] == "INVALID_ARGUMENT" and "robot" in error["message"]
    assert requests(gate) == []  # neither is a model request


def test_a_stream_cut_at_its_second_chunk() -> None:
    gate = Gate(KillPoint("model/chunk", 2, 0))
    with ModelServer(SCENARIO, gate, naming=GEMINI_CLI) as server:
        out: dict[str, Any] = {}

        def run() -> None:
            try:
                out["status"] = post(server, f"/v1beta/models/{MODEL}:streamGenerateContent"
                                     "?alt=sse", {"contents": [{"role": "user",
                                                  "parts": [{"text": PROMPT}]}]})  # fmt: skip
            except Exception as error:  # what the client saw is the assertion
                out["error"] = error

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        assert gate.fired.wait(10)
        gate.release()
        thread.join(10)
    error = out.get("error")
    assert isinstance(error, http.client.IncompleteRead), out
    events = [orjson.loads(line[6:]) for line in error.partial.split(b"\r\n")
              if line.startswith(b"data: ")]  # fmt: skip
    texts = [p.get("text") for e in events for p in e["candidates"][0]["content"]["parts"]]
    assert texts == list(SCENARIO.turns[0].steps[0].chunks[:2])
