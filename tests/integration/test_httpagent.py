"""The reference black-box agent (faultlab/runtime/httpagent) as a real process,
against a stand-in model and a stand-in MCP tool server, SIGKILLed inside the
tool body and resumed; and each bb_* variant showing its bug in that setup.

Stand-ins (the lab's own model and MCP servers are written elsewhere):
- the model is a MOCK of the Anthropic Messages API written here with
  http.server (streaming SSE): it asks for charge_card, then answers in text;
  it retries the charge when told the call was not started or aborted, stops
  to verify when told the outcome is unknown, and rejects (HTTP 400, as the
  real API does) a history with a tool_use left without its tool_result;
- the tool server is a real MCP stdio server built with the `mcp` SDK here:
  charge_card appends an fsynced line to a ledger file, then (once, when a
  hold file exists) sleeps in its body so the agent can be killed there.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from faultlab.runtime.backends.jsonl_format import read_log

pytestmark = pytest.mark.realprocess

REPO = Path(__file__).resolve().parents[2]
VARIANTS = REPO / "tests" / "variants"
PROMPT = "Charge card 4242 for 30 EUR."
FIRST_ID = "toolu_001"  # the first charge_card call of every test
Done = subprocess.CompletedProcess[str]

MCP_SERVER = '''
import os, sys, time
from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("pay")
ledger, hold = os.environ["LEDGER"], os.environ["HOLD"]
with open(os.environ["PIDS"], "a") as pids:
    pids.write(f"{os.getpid()}\\n")

@server.tool(annotations=ToolAnnotations(read_only_hint=False, idempotent_hint=False,
                                         destructive_hint=True))
def charge_card(card: str, amount: int) -> str:
    """Charge a card (not idempotent)."""
    fd = os.open(ledger, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.write(fd, f"charge {card} {amount}\\n".encode())
    os.fsync(fd)
    os.close(fd)
    if os.path.exists(hold):
        os.unlink(hold)
        time.sleep(60)  # the test kills the agent here, after the effect
    return f"charged {card} {amount}"

server.run()
'''


@dataclass
class MockModel:
    """The stand-in Anthropic endpoint and every request body it received."""

    requests: list[dict[str, Any]] = field(default_factory=list)
    arrivals: list[float] = field(default_factory=list)
    calls: int = 0

    def answer(self, body: dict[str, Any]) -> tuple[int, list[dict[str, Any]] | dict[str, Any]]:
        self.requests.append(body)
        self.arrivals.append(time.monotonic())
        messages = body["messages"]
        if unpaired(messages):
            problem = "tool_use ids were found without tool_result blocks"
            error = {"type": "invalid_request_error", "message": problem}
            return 400, {"type": "error", "error": error}
        tool = next(t["name"] for t in body["tools"] if t["name"].endswith("charge_card"))
        last = [b for b in messages[-1]["content"] if b["type"] == "tool_result"]
        if last:
            if not any(b["is_error"] for b in last):
                return 200, events_for("Card charged.", None)
            if any("unknown" in b["content"] for b in last):
                return 200, events_for("The charge may have gone through; I will verify.", None)
            return 200, events_for("Retrying the charge.", tool)  # retry-prone
        done = any(b["type"] == "tool_result" and not b["is_error"]
                   for m in messages for b in m["content"])  # fmt: skip
        if done:
            return 200, events_for("Already charged.", None)
        return 200, events_for("Charging now.", tool)

    def next_id(self) -> str:
        self.calls += 1
        return f"toolu_{self.calls:03d}"


MODEL = MockModel()


def unpaired(messages: list[dict[str, Any]]) -> list[str]:
    """tool_use ids not answered in the very next (user) message: what the API rejects."""
    missing = []
    for index, message in enumerate(messages):
        if message["role"] != "assistant":
            continue
        uses = [b["id"] for b in message["content"] if b["type"] == "tool_use"]
        after = messages[index + 1]["content"] if index + 1 < len(messages) else []
        answered = {b["tool_use_id"] for b in after if b["type"] == "tool_result"}
        missing += [u for u in uses if u not in answered]
    return missing


def events_for(text: str, tool: str | None) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {"type": "message_start", "message": {"id": "msg", "role": "assistant", "content": []}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    ]
    half = len(text) // 2
    for part in (text[:half], text[half:]):
        out.append({"type": "content_block_delta", "index": 0,
                    "delta": {"type": "text_delta", "text": part}})  # fmt: skip
    out.append({"type": "content_block_stop", "index": 0})
    if tool is not None:
        use = {"type": "tool_use", "id": MODEL.next_id(), "name": tool, "input": {}}
        args = json.dumps({"card": "4242", "amount": 30})
        out += [
            {"type": "content_block_start", "index": 1, "content_block": use},
            {"type": "content_block_delta", "index": 1,
             "delta": {"type": "input_json_delta", "partial_json": args[:10]}},
            {"type": "content_block_delta", "index": 1,
             "delta": {"type": "input_json_delta", "partial_json": args[10:]}},
            {"type": "content_block_stop", "index": 1},
        ]  # fmt: skip
    stop = "tool_use" if tool else "end_turn"
    out += [{"type": "message_delta", "delta": {"stop_reason": stop}}, {"type": "message_stop"}]
    return out


class Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        status, reply = MODEL.answer(body)
        self.send_response(status)
        if status != 200:
            data = json.dumps(reply).encode()
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()  # HTTP/1.0: the stream ends when the connection closes
        assert isinstance(reply, list)
        for event in reply:
            self.wfile.write(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())
            self.wfile.flush()

    def log_message(self, format: str, *args: Any) -> None:
        pass


@dataclass
class Setup:
    tmp: Path
    url: str

    @property
    def session(self) -> Path:
        return self.tmp / "session"

    @property
    def ledger(self) -> Path:
        return self.tmp / "ledger.txt"

    def charges(self) -> int:
        return len(self.ledger.read_text().splitlines()) if self.ledger.exists() else 0

    def command(self, script: str | None, prompt: str, *, resume: bool) -> list[str]:
        head = [sys.executable, str(VARIANTS / f"{script}.py")] if script else [
            sys.executable, "-m", "faultlab.runtime.httpagent"]  # fmt: skip
        tail = ["--resume"] if resume else []
        return [*head, "--model-url", self.url, "--mcp-config", str(self.tmp / "mcp.json"),
                       "--session-dir", str(self.session), *tail, prompt]  # fmt: skip

    def run(self, script: str | None, prompt: str, *, resume: bool) -> Done:
        command = self.command(script, prompt, resume=resume)
        return subprocess.run(command, env=env(), capture_output=True, text=True, timeout=60)

    def kill_in_tool_body(self, script: str | None = None) -> None:
        """Start a first turn, SIGKILL the agent's process group once the charge is in
        the ledger (the tool body is parked after its effect), and stop the tool server
        the SDK started in its own session."""
        (self.tmp / "hold").touch()
        agent = subprocess.Popen(self.command(script, PROMPT, resume=False), env=env(),
                                 start_new_session=True, stderr=subprocess.PIPE)  # fmt: skip
        deadline = time.monotonic() + 30
        while self.charges() < 1:
            assert agent.poll() is None and time.monotonic() < deadline, agent.stderr
            time.sleep(0.002)
        os.killpg(agent.pid, signal.SIGKILL)
        agent.wait(timeout=10)
        assert agent.stderr is not None
        agent.stderr.close()
        self.stop_tool_servers()

    def stop_tool_servers(self) -> None:
        pids = self.tmp / "pids"
        for pid in pids.read_text().split() if pids.exists() else ():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGKILL)

    def log(self) -> list[dict[str, Any]]:
        loaded = read_log((self.session / "session.jsonl").read_bytes(), "session.jsonl")
        assert loaded.cut_bytes == 0
        return [e.to_json() for e in loaded.events]


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO)}


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


@pytest.fixture
def setup(tmp_path: Path, server: str) -> Iterator[Setup]:
    (tmp_path / "server.py").write_text(MCP_SERVER)
    config = {"mcpServers": {"pay": {
        "command": sys.executable, "args": [str(tmp_path / "server.py")],
        "env": {"LEDGER": str(tmp_path / "ledger.txt"), "HOLD": str(tmp_path / "hold"),
                "PIDS": str(tmp_path / "pids")}}}}  # fmt: skip
    (tmp_path / "mcp.json").write_text(json.dumps(config))
    MODEL.requests.clear()
    MODEL.arrivals.clear()
    MODEL.calls = 0
    made = Setup(tmp_path, server)
    yield made
    made.stop_tool_servers()


def results(log: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e["data"] for e in log if e["type"] == "tool/result"]


def test_a_full_turn_completes_with_a_valid_log(setup: Setup) -> None:
    start = time.monotonic()
    done = setup.run(None, PROMPT, resume=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Card charged."
    first = MODEL.arrivals[0] - start
    print(f"\nstart-to-first-request: {first * 1000:.0f} ms")
    assert setup.charges() == 1
    log = setup.log()
    kinds = [e["type"] for e in log]
    assert kinds.count("request/header") == 2 and kinds[-1] == "turn/end"
    call = next(e["data"] for e in log if e["type"] == "tool/call")
    assert call["name"] == "pay__charge_card"
    assert call["arguments"] == {"card": "4242", "amount": 30}
    assert [r["content"] for r in results(log)] == ["charged 4242 30"]
    assert log[-1]["data"]["reason"] == {"kind": "completed"}
    assert not unpaired(MODEL.requests[-1]["messages"])
    offered = MODEL.requests[0]["tools"]
    assert [t["name"] for t in offered] == ["pay__charge_card"]
    assert offered[0]["input_schema"]["required"] == ["card", "amount"]


def test_resume_of_a_missing_session_is_one_line_and_exit_2(setup: Setup) -> None:
    done = setup.run(None, "Continue.", resume=True)
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1 and "no session log" in done.stderr


def test_sigkill_in_the_tool_body_resumes_with_outcome_unknown(setup: Setup) -> None:
    setup.kill_in_tool_body()
    assert setup.charges() == 1
    on_disk = setup.log()
    assert [e["type"] for e in on_disk][-1] == "tool/call"  # durable before it was sent
    resumed = setup.run(None, "Continue.", resume=True)
    assert resumed.returncode == 0, resumed.stderr
    assert "verify" in resumed.stdout
    (repaired,) = results(setup.log())[:1]
    assert repaired["error"]["code"] == "TOOL_OUTCOME_UNKNOWN"
    assert repaired["error"]["retry"] == "verify" and repaired["synthetic"]
    last = MODEL.requests[-1]["messages"]
    sent = [b for m in last for b in m["content"] if b["type"] == "tool_result"]
    assert [b["content"] for b in sent] == [repaired["content"]]
    assert "Do not retry it blindly" in sent[0]["content"] and sent[0]["is_error"]
    assert not unpaired(last)
    assert setup.charges() == 1


@pytest.mark.parametrize("variant", ["bb_call_after_result", "bb_async_persist",
                                     "bb_says_aborted", "bb_reruns_call"])  # fmt: skip
def test_variant_charges_twice(setup: Setup, variant: str) -> None:
    setup.kill_in_tool_body(variant)
    before = len(MODEL.requests)
    resumed = setup.run(variant, "Continue.", resume=True)
    assert resumed.returncode == 0, resumed.stderr
    assert setup.charges() == 2
    resumed_first = MODEL.requests[before]
    blocks = [b for m in resumed_first["messages"] for b in m["content"]]
    texts = [b for b in blocks if b["type"] == "tool_result"]
    if variant in ("bb_call_after_result", "bb_async_persist"):
        # Intent lost: the resumed agent's first request does not mention the charge.
        assert FIRST_ID not in json.dumps(blocks)
    if variant == "bb_async_persist":
        assert PROMPT not in json.dumps(blocks)  # even the user's prompt was lost
    if variant == "bb_says_aborted":
        assert any("aborted" in b["content"] for b in texts)


def test_variant_leaving_the_call_dangling_sends_an_unpaired_tool_use(setup: Setup) -> None:
    setup.kill_in_tool_body("bb_leaves_dangling")
    resumed = setup.run("bb_leaves_dangling", "Continue.", resume=True)
    assert resumed.returncode == 8, resumed.stderr  # the model endpoint refused it
    assert "HTTP 400" in resumed.stderr
    assert unpaired(MODEL.requests[-1]["messages"]) == [FIRST_ID]
    assert setup.charges() == 1

