# The MCP tool server as an agent sees it: spawned over stdio (and HTTP) by
# the SDK's own client, with a real gate on a real Unix socket in this process
# and a real ledger file.
from __future__ import annotations

import asyncio
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import mcp_types
import orjson
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from faultlab.lab.process.reference import read_ledger
from faultlab.lab.servers import Gate, GateBridge, parse_kill_point
from faultlab.lab.servers.mcptools import tool_definitions
from faultlab.scenario import load_scenario

pytestmark = pytest.mark.realprocess

ROOT = Path(__file__).resolve().parents[4]
PAYMENT = ROOT / "scenarios" / "payment.toml"
IDEMPOTENT = ROOT / "scenarios" / "idempotent-key.toml"
READ_ONLY = ROOT / "scenarios" / "read-only.toml"
MODULE = "faultlab.lab.servers.mcptools"


@pytest.fixture
def short_tmp() -> Any:
    # AF_UNIX paths are limited to ~107 bytes; pytest's tmp_path can exceed it.
    with tempfile.TemporaryDirectory(prefix="flmcp-") as name:
        yield Path(name)


@asynccontextmanager
async def session(
    scenario: Path, ledger: Path, gate: Path | None = None
) -> AsyncIterator[ClientSession]:
    args = ["-m", MODULE, str(scenario), "--ledger", str(ledger)]
    if gate is not None:
        args += ["--gate", str(gate)]
    params = StdioServerParameters(command=sys.executable, args=args, cwd=str(ROOT))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
        await client.initialize()
        yield client


def run(body: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(asyncio.wait_for(body(), 60))


def boundaries(gate: Gate) -> list[str]:
    return [o["boundary"] for o in gate.snapshot() if "boundary" in o]


def test_tool_definitions_map_annotations() -> None:
    (charge,) = tool_definitions(load_scenario(PAYMENT))
    assert charge["annotations"] == {"readOnlyHint": False, "idempotentHint": False,
                                     "destructiveHint": True, "openWorldHint": True}  # fmt: skip
    assert charge["inputSchema"]["properties"] == {
        "amount": {"type": "integer"}, "currency": {"type": "string"}}  # fmt: skip
    (invoice,) = tool_definitions(load_scenario(IDEMPOTENT))
    assert invoice["annotations"]["destructiveHint"] is False
    assert invoice["inputSchema"]["properties"]["idempotency_key"]["type"] == "string"


def test_list_tools_over_stdio(short_tmp: Path) -> None:
    async def body() -> None:
        async with session(PAYMENT, short_tmp / "a.jsonl") as client:
            (charge,) = (await client.list_tools()).tools
        assert charge.name == "charge_card"
        assert charge.annotations is not None
        assert charge.annotations.destructive_hint is True
        assert charge.annotations.idempotent_hint is False
        assert charge.annotations.read_only_hint is False
        assert charge.input_schema["additionalProperties"] is True
        async with session(READ_ONLY, short_tmp / "b.jsonl") as client:
            (search,) = (await client.list_tools()).tools
        assert search.annotations is not None
        assert search.annotations.read_only_hint is True
        assert search.annotations.destructive_hint is False
        assert search.annotations.open_world_hint is False

    run(body)


def test_charge_card_ledger_and_boundaries(short_tmp: Path) -> None:
    gate = Gate()
    bridge = GateBridge(gate, short_tmp / "gate.sock")
    ledger = short_tmp / "ledger.jsonl"

    async def body() -> None:
        async with session(PAYMENT, ledger, bridge.path) as client:
            result = await client.call_tool("charge_card", {"amount": 40, "currency": "EUR"})
            assert not result.is_error
            assert result.content[0].text == "charged 40.00 EUR"  # type: ignore[union-attr]
            missing = await client.call_tool("refund_card", {})
            assert missing.is_error
            # tool/replied is reported after the flush; wait for its round trip.
            for _ in range(200):
                if boundaries(gate).count("tool/replied") == 1:
                    break
                await asyncio.sleep(0.01)

    try:
        run(body)
    finally:
        bridge.close()
    assert read_ledger(ledger) == ({"callId": "mcp-1", "tool": "charge_card",
                                    "arguments": {"amount": 40, "currency": "EUR"},
                                    "key": None},)  # fmt: skip
    seen = [o for o in gate.snapshot() if o.get("callId") == "mcp-1"]
    assert [o["boundary"] for o in seen] == ["tool/received", "tool/applied", "tool/replied"]
    assert seen[1]["applied"] is True
    assert seen[0]["arguments"] == {"amount": 40, "currency": "EUR"}
    # The unknown tool was received and answered, never applied.
    unknown = [o["boundary"] for o in gate.snapshot() if o.get("tool") == "refund_card"]
    assert unknown == ["tool/received", "tool/replied"]


def test_held_at_received_applies_nothing_and_never_replies(short_tmp: Path) -> None:
    gate = Gate(parse_kill_point("tool/received#1@0"))
    bridge = GateBridge(gate, short_tmp / "gate.sock")
    ledger = short_tmp / "ledger.jsonl"
    outcome: list[object] = []

    async def body() -> None:
        try:
            async with session(PAYMENT, ledger, bridge.path) as client:
                call = asyncio.create_task(client.call_tool("charge_card", {"amount": 40}))
                assert await asyncio.to_thread(gate.fired.wait, 30)
                await asyncio.sleep(0.2)  # were it not held, the 2 ms tool would be done
                assert read_ledger(ledger) == ()
                assert not call.done()
                gate.release()
                try:
                    outcome.append(await call)
                except Exception as exc:  # the server went away: no result
                    outcome.append(exc)
        except Exception as exc:  # the transport's own teardown after the server exited
            outcome.append(exc)

    try:
        run(body)
    finally:
        bridge.close()
    # The call got no result: the server exited, so the client saw the connection close.
    assert len(outcome) == 1 and isinstance(outcome[0], MCPError), outcome
    assert "closed" in str(outcome[0]).lower()
    assert read_ledger(ledger) == ()
    assert boundaries(gate) == ["tool/received"]


def test_held_at_replied_after_the_agent_has_the_result(short_tmp: Path) -> None:
    # tool/replied is reported after the reply was flushed to the agent: held
    # there, the agent already holds the result and the effect is in the ledger.
    gate = Gate(parse_kill_point("tool/replied#1@0"))
    bridge = GateBridge(gate, short_tmp / "gate.sock")
    ledger = short_tmp / "ledger.jsonl"
    texts: list[str] = []

    async def body() -> None:
        try:
            async with session(PAYMENT, ledger, bridge.path) as client:
                # The SDK client lists tools after a call it has no schema for;
                # held after the reply, the server answers nothing more.
                await client.list_tools()
                result = await client.call_tool("charge_card", {"amount": 40})
                texts.append(result.content[0].text)  # type: ignore[union-attr]
                assert await asyncio.to_thread(gate.fired.wait, 30)
                gate.release()
        except Exception:  # the server exits once released; teardown may notice
            pass

    try:
        run(body)
    finally:
        bridge.close()
    assert texts == ["charged 40.00 EUR"]
    assert len(read_ledger(ledger)) == 1
    assert boundaries(gate) == ["tool/received", "tool/applied", "tool/replied"]


def test_idempotency_key_applied_once(short_tmp: Path) -> None:
    gate = Gate()
    bridge = GateBridge(gate, short_tmp / "gate.sock")
    ledger = short_tmp / "ledger.jsonl"

    async def body() -> None:
        async with session(IDEMPOTENT, ledger, bridge.path) as client:
            for _ in range(2):
                args = {"order": 7, "idempotency_key": "order-7"}
                result = await client.call_tool("create_invoice", args)
                assert not result.is_error
        # A second server process (the resumed agent's) honours the key too.
        async with session(IDEMPOTENT, ledger, bridge.path) as client:
            await client.call_tool("create_invoice", {"order": 7, "idempotency_key": "order-7"})

    try:
        run(body)
    finally:
        bridge.close()
    records = read_ledger(ledger)
    assert [r["key"] for r in records] == ["order-7"]
    applied = [o["applied"] for o in gate.snapshot() if o.get("boundary") == "tool/applied"]
    assert applied == [True, False, False]


def test_streamable_http_answers_a_call(short_tmp: Path) -> None:
    ledger, url_file = short_tmp / "ledger.jsonl", short_tmp / "url"
    gate = Gate()
    bridge = GateBridge(gate, short_tmp / "gate.sock")
    server = subprocess.Popen(
        [sys.executable, "-m", MODULE, str(PAYMENT), "--ledger", str(ledger),
         "--transport", "http", "--port", "0", "--url-file", str(url_file),
         "--gate", str(bridge.path)],
        cwd=ROOT, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while not url_file.exists() and server.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        url = url_file.read_text().strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp")

        async def body() -> None:
            async with (
                streamable_http_client(url) as (read, write),
                ClientSession(read, write) as client,
            ):
                await client.initialize()
                result = await client.call_tool("charge_card", {"amount": 40})
                assert result.content[0].text == "charged 40.00 EUR"  # type: ignore[union-attr]
            for _ in range(200):
                if "tool/replied" in boundaries(gate):
                    break
                await asyncio.sleep(0.01)

        run(body)
    finally:
        server.terminate()
        server.wait(10)
        bridge.close()
    assert [r["tool"] for r in read_ledger(ledger)] == ["charge_card"]
    assert boundaries(gate) == ["tool/received", "tool/applied", "tool/replied"]


@pytest.mark.parametrize(
    "case",
    ["missing-scenario", "broken-scenario", "unwritable-ledger", "bad-socket", "bad-option"],
)
def test_bad_input_is_one_line_and_exit_2(short_tmp: Path, case: str) -> None:
    broken = short_tmp / "broken.toml"
    broken.write_text("format = 1\nname = \n")
    not_a_dir = short_tmp / "file"
    not_a_dir.write_text("")
    ledger = str(short_tmp / "ledger.jsonl")
    args = {
        "missing-scenario": [str(short_tmp / "nope.toml"), "--ledger", ledger],
        "broken-scenario": [str(broken), "--ledger", ledger],
        "unwritable-ledger": [str(PAYMENT), "--ledger", str(not_a_dir / "ledger.jsonl")],
        "bad-socket": [str(PAYMENT), "--ledger", ledger, "--gate", str(short_tmp / "no.sock")],
        "bad-option": [str(PAYMENT), "--ledger", ledger, "--transport", "pigeon"],
    }[case]
    done = subprocess.run([sys.executable, "-m", MODULE, *args], cwd=ROOT, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 2
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert done.stderr.startswith("faultlab-mcp: ")
    assert "Traceback" not in done.stderr
    assert done.stdout == ""


def test_a_server_that_outlives_the_agent_finishes_the_held_call(short_tmp: Path) -> None:
    # `sigkill-agent` spares a tool server the agent put in a group of its
    # own: the call it holds at tool/received goes on once released, although
    # its client (the agent) is gone, and its effect lands in the ledger.
    # Raw JSON-RPC lines: the SDK's client would terminate the server on exit.
    gate = Gate(parse_kill_point("tool/received#1@0"))
    bridge = GateBridge(gate, short_tmp / "gate.sock")
    ledger = short_tmp / "ledger.jsonl"
    server = subprocess.Popen(
        [sys.executable, "-m", MODULE, str(PAYMENT), "--ledger", str(ledger),
         "--gate", str(bridge.path)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=ROOT,
    )  # fmt: skip
    assert server.stdin is not None and server.stdout is not None

    def send(message: dict[str, Any]) -> None:
        assert server.stdin is not None
        server.stdin.write(orjson.dumps({"jsonrpc": "2.0", **message}) + b"\n")
        server.stdin.flush()

    try:
        send({"id": 1, "method": "initialize", "params": {
            "protocolVersion": mcp_types.LATEST_PROTOCOL_VERSION, "capabilities": {},
            "clientInfo": {"name": "gone-agent", "version": "0"}}})  # fmt: skip
        assert b'"id":1' in server.stdout.readline().replace(b" ", b"")
        send({"method": "notifications/initialized"})
        send({"id": 2, "method": "tools/call",
              "params": {"name": "charge_card", "arguments": {"amount": 40}}})  # fmt: skip
        assert gate.fired.wait(30)
        server.stdin.close()  # the agent died: its end of the pipe is gone
        gate.release(survivors_proceed=True)
        assert server.wait(30) == 0
    finally:
        if server.poll() is None:
            server.kill()
            server.wait(30)
        bridge.close()
    assert [effect["tool"] for effect in read_ledger(ledger)] == ["charge_card"]
    assert boundaries(gate)[:2] == ["tool/received", "tool/applied"]
