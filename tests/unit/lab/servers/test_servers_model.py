# The scripted model server over real HTTP on 127.0.0.1: each API streamed
# and not, text and tool calls, the gate's records, a parked request, a cut
# stream, branching on a resumed history, and bad requests.
from __future__ import annotations

import http.client
import threading
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import orjson
import pytest

from faultlab.lab.servers import Gate, KillPoint, ModelServer
from faultlab.scenario import Scenario, load_scenario
from tests.conftest import SCENARIOS

PATHS = {"anthropic": "/v1/messages?beta=true", "chat": "/v1/chat/completions",
         "responses": "/v1/responses"}  # fmt: skip


def scenario(name: str) -> Scenario:
    return load_scenario(SCENARIOS / f"{name}.toml")


@pytest.fixture
def served() -> Iterator[tuple[ModelServer, Gate]]:
    gate = Gate()
    with ModelServer(scenario("deploy-careful"), gate) as server:
        yield server, gate


def post(url: str, path: str, body: Any, *, raw: bytes | None = None,
         method: str = "POST") -> tuple[int, bytes]:  # fmt: skip
    conn = http.client.HTTPConnection(urlsplit(url).netloc, timeout=10)
    try:
        data = raw if raw is not None else orjson.dumps(body)
        # The server's URL ends in its secret: every path is under it.
        conn.request(method, urlsplit(url).path + path, body=data if method == "POST" else None,
                     headers={"content-type": "application/json"})  # fmt: skip
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def responses_noted(gate: Gate, count: int) -> list[dict[str, Any]]:
    """The model/response facts, once `count` are there: the server notes an
    answer after sending it, so the client can read it a moment earlier."""
    deadline = time.monotonic() + 10
    while True:
        found = [o for o in gate.snapshot() if o.get("fact") == "model/response"]
        if len(found) >= count or time.monotonic() > deadline:
            return found
        time.sleep(0.005)


def sse_data(raw: bytes) -> list[dict[str, Any]]:
    return [orjson.loads(line[6:]) for line in raw.split(b"\n")
            if line.startswith(b"data: ") and line != b"data: [DONE]"]  # fmt: skip


def answer_of(api: str, stream: bool, raw: bytes) -> tuple[str, list[tuple[str, str, Any]]]:
    """(text, [(call id, wire name, arguments)]) of an answer, however sent."""
    if not stream:
        body = orjson.loads(raw)
        if api == "anthropic":
            return ("".join(b["text"] for b in body["content"] if b["type"] == "text"),
                    [(b["id"], b["name"], b["input"]) for b in body["content"]
                     if b["type"] == "tool_use"])  # fmt: skip
        if api == "chat":
            message = body["choices"][0]["message"]
            return (message["content"] or "", [
                (c["id"], c["function"]["name"], orjson.loads(c["function"]["arguments"]))
                for c in message.get("tool_calls") or ()])  # fmt: skip
        return ("".join(p["text"] for i in body["output"] if i["type"] == "message"
                        for p in i["content"]),
                [(i["call_id"], i["name"], orjson.loads(i["arguments"]))
                 for i in body["output"] if i["type"] == "function_call"])  # fmt: skip
    events = sse_data(raw)
    text, calls = "", []
    for e in events:
        if api == "anthropic":
            if e["type"] == "content_block_delta" and e["delta"]["type"] == "text_delta":
                text += e["delta"]["text"]
            if e["type"] == "content_block_start" and e["content_block"]["type"] == "tool_use":
                calls.append([e["content_block"]["id"], e["content_block"]["name"], ""])
            if e["type"] == "content_block_delta" and e["delta"]["type"] == "input_json_delta":
                calls[-1][2] += e["delta"]["partial_json"]
        elif api == "chat":
            delta = e["choices"][0]["delta"] if e["choices"] else {}
            text += delta.get("content") or ""
            for c in delta.get("tool_calls") or ():
                calls.append([c["id"], c["function"]["name"], c["function"]["arguments"]])
        else:
            if e["type"] == "response.output_text.delta":
                text += e["delta"]
            if e["type"] == "response.output_item.done" and e["item"]["type"] == "function_call":
                calls.append([e["item"]["call_id"], e["item"]["name"], e["item"]["arguments"]])
    last = events[-1]["type"] if api != "chat" else "done"
    assert last in ("message_stop", "response.completed", "done")
    if api == "chat":
        assert raw.endswith(b"data: [DONE]\n\n")
    return text, [(c[0], c[1], orjson.loads(c[2])) for c in calls]


def first_request(api: str, stream: bool) -> dict[str, Any]:
    user = "Deploy api v2."
    if api == "responses":
        return {"model": "m", "stream": stream, "input": [{"role": "user", "content": user}]}
    return {"model": "m", "stream": stream, "max_tokens": 64,
            "messages": [{"role": "user", "content": user}]}  # fmt: skip


def with_result(api: str, body: dict[str, Any], call_id: str, text: str) -> dict[str, Any]:
    """`body` continued by the scripted first step's call and its result."""
    args = {"service": "api", "version": 2}
    if api == "anthropic":
        extra = [
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Deploying api v2."},
                    {"type": "tool_use", "id": call_id, "name": "deploy", "input": args},
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": call_id, "content": text}],
            },
        ]
        return {**body, "messages": body["messages"] + extra}
    if api == "chat":
        extra = [
            {
                "role": "assistant",
                "content": "Deploying api v2.",
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": "deploy", "arguments": orjson.dumps(args).decode()},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": call_id, "content": text},
        ]
        return {**body, "messages": body["messages"] + extra}
    items = [
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Deploying api v2."}],
        },
        {
            "type": "function_call",
            "call_id": call_id,
            "name": "deploy",
            "arguments": orjson.dumps(args).decode(),
        },
        {"type": "function_call_output", "call_id": call_id, "output": text},
    ]
    return {**body, "input": body["input"] + items}  # fmt: skip


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("api", ["anthropic", "chat", "responses"])
def test_each_api_answers_the_script(served: tuple[ModelServer, Gate], api: str,
                                     stream: bool) -> None:  # fmt: skip
    server, gate = served
    body = first_request(api, stream)
    status, raw = post(server.url, PATHS[api], body)
    assert status == 200
    text, calls = answer_of(api, stream, raw)
    assert text == "Deploying api v2."
    assert [(name, args) for _, name, args in calls] == [("deploy", {"service": "api",
                                                                     "version": 2})]  # fmt: skip
    assert calls[0][0].startswith("toolu_" if api == "anthropic" else "call_")
    status, raw = post(server.url, PATHS[api], with_result(api, body, calls[0][0], "deployed"))
    assert answer_of(api, stream, raw) == ("api v2 is deployed.", [])
    requests = [o for o in gate.snapshot() if o.get("boundary") == "model/request"]
    assert [(r["api"], r["step"], r["stream"]) for r in requests] == [(api, 0, stream),
                                                                      (api, 1, stream)]  # fmt: skip
    assert requests[1]["history"][1]["calls"][0]["name"] == "deploy"
    assert requests[1]["history"][2] == {"role": "tool", "text": "deployed",
                                         "callId": calls[0][0]}  # fmt: skip
    responses = responses_noted(gate, 2)
    chunks = [o for o in gate.snapshot() if o.get("boundary") == "model/chunk"]
    # Streamed: each text delta and each call is a chunk; whole: none.
    steps = scenario("deploy-careful").turns[0].steps
    expected = [(1, i) for i in range(len(steps[0].chunks) + 1)]
    expected += [(2, i) for i in range(len(steps[1].chunks))]
    assert [(c["request"], c["index"]) for c in chunks] == (expected if stream else [])
    assert [r["request"] for r in responses] == [1, 2]
    assert responses[0]["calls"] == [{"id": calls[0][0], "name": "deploy",
                                      "arguments": {"service": "api", "version": 2}}]  # fmt: skip


def test_tools_keep_the_agents_names_and_namespaces(served: tuple[ModelServer, Gate]) -> None:
    server, _ = served
    anthropic = {**first_request("anthropic", False),
                 "tools": [{"name": "mcp__faultlab__deploy", "input_schema": {}}]}  # fmt: skip
    _, raw = post(server.url, PATHS["anthropic"], anthropic)
    assert answer_of("anthropic", False, raw)[1][0][1] == "mcp__faultlab__deploy"
    responses = {
        **first_request("responses", True),
        "tools": [
            {
                "type": "namespace",
                "name": "mcp__faultlab__",
                "description": "faultlab",
                "tools": [{"type": "function", "name": "deploy", "parameters": {}}],
            }
        ],
    }
    _, raw = post(server.url, PATHS["responses"], responses)
    done = [e["item"] for e in sse_data(raw) if e["type"] == "response.output_item.done"]
    assert [(i["namespace"], i["name"]) for i in done if i["type"] == "function_call"] == [
        ("mcp__faultlab__", "deploy")
    ]


@pytest.mark.parametrize("api", ["anthropic", "chat", "responses"])
def test_same_history_same_answer_fresh_call_ids(served: tuple[ModelServer, Gate],
                                                 api: str) -> None:  # fmt: skip
    """A step answered again (an agent resumed after a kill sends the same
    history) gets the same answer under new call ids: an id handed out
    twice would make the agent's history invalid by faultlab's doing."""
    server, gate = served
    body = first_request(api, True)
    answers = [answer_of(api, True, post(server.url, PATHS[api], body)[1]) for _ in range(3)]
    assert len({(text, tuple((n, orjson.dumps(a)) for _, n, a in calls))
                for text, calls in answers}) == 1  # fmt: skip
    ids = [calls[0][0] for _, calls in answers]
    assert len(set(ids)) == 3, ids
    noted = [c["id"] for r in responses_noted(gate, 3) for c in r["calls"]]
    assert noted == ids  # the gate's note names the ids the agent got


def test_same_history_same_answer_and_digest(served: tuple[ModelServer, Gate]) -> None:
    server, gate = served
    body = first_request("anthropic", True)
    first, second = (
        post(server.url, PATHS["anthropic"], body),
        post(server.url, PATHS["anthropic"], body),
    )
    assert answer_of("anthropic", True, first[1])[0] == answer_of("anthropic", True, second[1])[0]
    digests = [o["digest"] for o in gate.snapshot() if o.get("boundary") == "model/request"]
    assert len(digests) == 2 and digests[0] == digests[1]
    other = {**body, "messages": [{"role": "user", "content": "something else"}]}
    post(server.url, PATHS["anthropic"], other)
    assert len(responses_noted(gate, 3)) == 3
    last = [o["digest"] for o in gate.snapshot() if o.get("boundary") == "model/request"][-1]
    assert last != digests[0]


def test_resumed_unknown_outcome_takes_the_careful_branch(
        served: tuple[ModelServer, Gate]) -> None:  # fmt: skip
    server, gate = served
    body = with_result(
        "anthropic",
        first_request("anthropic", False),
        "toolu_x",
        "TOOL_OUTCOME_UNKNOWN: the agent was killed; the outcome is unknown",
    )
    body["messages"][-1]["content"].append({"type": "text", "text": "Continue."})
    _, raw = post(server.url, PATHS["anthropic"], body)
    text, calls = answer_of("anthropic", False, raw)
    assert text.startswith("The deploy's outcome is unknown")
    assert [(name, args) for _, name, args in calls] == [("deploy_status", {"service": "api"})]
    request = [o for o in gate.snapshot() if o.get("boundary") == "model/request"][-1]
    assert (request["step"], request["branch"]) == (1, "TOOL_OUTCOME_UNKNOWN")


def threaded(target: Any) -> tuple[threading.Thread, dict[str, Any]]:
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["result"] = target()
        except Exception as error:  # what the client saw is the assertion
            out["error"] = error

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, out


def test_parked_request_gets_no_answer_then_a_dropped_connection() -> None:
    gate = Gate(KillPoint("model/request", 1, 0))
    with ModelServer(scenario("deploy-careful"), gate) as server:
        thread, out = threaded(lambda: post(server.url, PATHS["chat"],
                                            first_request("chat", False)))  # fmt: skip
        assert gate.fired.wait(10)
        thread.join(0.3)
        assert thread.is_alive() and not out, "a parked request must stay unanswered"
        gate.release()
        thread.join(10)
        assert isinstance(out.get("error"), (http.client.RemoteDisconnected, ConnectionError))
        assert not [o for o in gate.snapshot() if o.get("fact") == "model/response"]


def test_stream_cut_at_the_second_chunk() -> None:
    gate = Gate(KillPoint("model/chunk", 2, 0))
    with ModelServer(scenario("deploy-careful"), gate) as server:
        thread, out = threaded(lambda: post(server.url, PATHS["anthropic"],
                                            first_request("anthropic", True)))  # fmt: skip
        assert gate.fired.wait(10)
        gate.release()
        thread.join(10)
        error = out.get("error")
        assert isinstance(error, http.client.IncompleteRead), out
        deltas = [e["delta"].get("text") for e in sse_data(error.partial)
                  if e["type"] == "content_block_delta"]  # fmt: skip
        # Chunks 1 and 2 sent ("Deploying " and the next), the stream never ends.
        assert len(deltas) == 2 and deltas[0] == "Deploying ", deltas
        assert "".join(deltas) != "Deploying api v2."
        assert gate.fired_at is not None and gate.fired_at["index"] == 1


def test_bad_requests_get_json_errors(served: tuple[ModelServer, Gate]) -> None:
    server, gate = served
    status, raw = post(server.url, PATHS["anthropic"], None, raw=b"{not json")
    assert status == 400 and orjson.loads(raw)["error"]["type"] == "invalid_request_error"
    status, raw = post(server.url, PATHS["chat"], {"messages": "nope"})
    assert status == 400 and "messages" in orjson.loads(raw)["error"]["message"]
    status, raw = post(server.url, "/v1/elsewhere", {})
    assert status == 404 and "no route" in orjson.loads(raw)["error"]["message"]
    status, raw = post(server.url, "/v1/models", None, method="GET")
    assert status == 200 and orjson.loads(raw)["data"][0]["id"] == "faultlab-scripted"
    status, raw = post(server.url, "/v1/messages/count_tokens", first_request("anthropic", False))
    assert status == 200 and orjson.loads(raw)["input_tokens"] > 0
    assert not [o for o in gate.snapshot() if o.get("boundary") == "model/request"]


def test_keep_alive_serves_several_requests_on_one_connection(
        served: tuple[ModelServer, Gate]) -> None:  # fmt: skip
    server, gate = served
    conn = http.client.HTTPConnection(urlsplit(server.url).netloc, timeout=10)
    for stream in (True, False, True):
        conn.request(
            "POST", urlsplit(server.url).path + PATHS["responses"],
            body=orjson.dumps(first_request("responses", stream)),
        )
        response = conn.getresponse()
        assert response.status == 200
        assert answer_of("responses", stream, response.read())[0] == "Deploying api v2."
    conn.close()
    assert len(responses_noted(gate, 3)) == 3


def converse(server: ModelServer, api: str, user: str, result: Any) -> list[str]:
    """Play an agent that runs every call (its result from `result(name)`)
    until the model answers without calls; the texts the model sent."""
    body = first_request(api, False)
    body["messages" if api != "responses" else "input"][0]["content"] = user
    texts = []
    for _ in range(10):
        _, raw = post(server.url, PATHS[api], body)
        text, calls = answer_of(api, False, raw)
        texts.append(text)
        if not calls:
            return texts
        call_id, name, args = calls[0]
        body = {**body, "messages": body["messages"] + [
            {"role": "assistant", "content": [{"type": "text", "text": text},
             {"type": "tool_use", "id": call_id, "name": name, "input": args}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id,
                                          "content": result(name)}]}]}  # fmt: skip
    raise AssertionError(f"no end: {texts}")


@pytest.mark.parametrize(("name", "result", "texts"), [
    ("payment", "charged", ["Charging the card.", "The card was charged."]),
    ("deploy-careful", "deployed", ["Deploying api v2.", "api v2 is deployed."]),
    ("idempotent-key", "TOOL_OUTCOME_UNKNOWN: the outcome is unknown",
     ["Creating the invoice.", "Retrying: the invoice tool is idempotent.",
      "Invoice INV-7 is ready."]),
])  # fmt: skip
def test_bundled_scenarios_play_through(name: str, result: str, texts: list[str]) -> None:
    spec = scenario(name)
    first = [r for r in [result]]
    with ModelServer(spec, Gate()) as server:
        # An unknown outcome once, then success: a retry-prone script retries.
        outcomes = iter(first + ["ok"] * 5)
        assert converse(server, "anthropic", spec.turns[0].user,
                        lambda _: next(outcomes)) == texts  # fmt: skip


def test_stop_closes_a_parked_connection_without_a_release() -> None:
    gate = Gate(KillPoint("model/request", 1, 0))
    server = ModelServer(scenario("payment"), gate).start()
    thread, out = threaded(lambda: post(server.url, PATHS["anthropic"],
                                        first_request("anthropic", True)))  # fmt: skip
    assert gate.fired.wait(10)
    server.stop()
    thread.join(10)
    assert not thread.is_alive()
    assert isinstance(out.get("error"), (http.client.RemoteDisconnected, ConnectionError))
    server.stop()  # idempotent
