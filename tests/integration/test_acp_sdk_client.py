# The reference ACP agent with a client that is not faultlab: the SDK's own
# example flow (spawn_agent_process, initialize, session/new, session/prompt,
# session/cancel, session/load in a fresh process), checking each response.
from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from acp import PROTOCOL_VERSION, RequestError, spawn_agent_process, text_block
from acp.schema import (
    AgentMessageChunk,
    ClientCapabilities,
    Implementation,
    ToolCallProgress,
    ToolCallStart,
    UserMessageChunk,
)

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = ROOT / "tests" / "scenarios" / "acp-two-inflight.toml"
pytestmark = pytest.mark.realprocess


class ExampleClient:
    """A minimal client, as in the SDK's examples: it keeps what it is shown."""

    def __init__(self, updates: list[tuple[str, Any]] | None = None) -> None:
        self.updates: list[tuple[str, Any]] = updates or []

    async def session_update(self, session_id: str, update: Any, **_kwargs: Any) -> None:
        self.updates.append((session_id, update))

    async def request_permission(self, *_args: Any, **_kwargs: Any) -> Any:
        raise RequestError.method_not_found("session/request_permission")


def _progress(client: ExampleClient) -> list[ToolCallProgress]:
    return [u for _s, u in client.updates if isinstance(u, ToolCallProgress)]


def _agent(sessions: Path) -> tuple[str, ...]:
    return (sys.executable, "-m", "faultlab.runtime.acp", str(SCENARIO),
            "--sessions-dir", str(sessions))  # fmt: skip


def _env() -> dict[str, str]:
    # The SDK's spawn keeps a minimal environment: give the child its Python path.
    keep = ("PYTHONPATH", "VIRTUAL_ENV", "PATH", "HOME")
    return {key: os.environ[key] for key in keep if key in os.environ}


async def _first_session(sessions: Path) -> tuple[str, ExampleClient]:
    client = ExampleClient()
    command, *args = _agent(sessions)
    async with spawn_agent_process(
        client, command, *args, env=_env(), transport_kwargs={"stderr": subprocess.DEVNULL}
    ) as (conn, _process):
        init = await conn.initialize(
            protocol_version=PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(),
            client_info=Implementation(name="example-client", version="0"),
        )
        assert init.protocol_version == PROTOCOL_VERSION
        assert init.agent_capabilities is not None and init.agent_capabilities.load_session
        session = await conn.new_session(cwd=str(sessions), mcp_servers=[])
        assert session.session_id

        prompt = asyncio.ensure_future(
            conn.prompt(session_id=session.session_id, prompt=[text_block("Fetch a, b; write c.")])
        )
        # Cancel once both reads are shown running.
        for _ in range(2000):
            running = [u for u in _progress(client) if u.status == "in_progress"]
            if len(running) == 2 or prompt.done():
                break
            await asyncio.sleep(0.005)
        await conn.cancel(session_id=session.session_id)
        cancelled = await asyncio.wait_for(prompt, 30)
        assert cancelled.stop_reason == "cancelled"
        finals = {u.tool_call_id: u for u in _progress(client) if u.status != "in_progress"}
        assert [u.status for u in finals.values()] == ["completed", "completed", "failed"]
        aborted = finals["call-t0-s0-2"].field_meta or {}
        assert aborted["faultlab"]["code"] == "ABORTED_BEFORE_DISPATCH"

        again = await conn.prompt(session_id=session.session_id, prompt=[text_block("Go on.")])
        assert again.stop_reason == "end_turn"
        assert (again.field_meta or {})["faultlab"]["nextPrompt"] is None
        with pytest.raises(RequestError):
            await conn.prompt(session_id="no-such-session", prompt=[text_block("hi")])
    return session.session_id, client


async def _reload(sessions: Path, session_id: str) -> ExampleClient:
    client = ExampleClient()
    command, *args = _agent(sessions)
    async with spawn_agent_process(
        client, command, *args, env=_env(), transport_kwargs={"stderr": subprocess.DEVNULL}
    ) as (conn, _process):
        await conn.initialize(protocol_version=PROTOCOL_VERSION)
        loaded = await conn.load_session(cwd=str(sessions), session_id=session_id, mcp_servers=[])
        assert (loaded.field_meta or {})["faultlab"]["nextPrompt"] is None
        with pytest.raises(RequestError):
            await conn.load_session(cwd=str(sessions), session_id="0000", mcp_servers=[])
    return client


def test_sdk_example_client_flow(tmp_path: Path) -> None:
    session_id, live = asyncio.run(_first_session(tmp_path))
    assert {s for s, _u in live.updates} == {session_id}
    replayed = asyncio.run(_reload(tmp_path, session_id)).updates
    kinds = [type(u).__name__ for _s, u in replayed]
    # The replay is the whole conversation: both user messages, the texts,
    # the three calls with their results (the aborted one included).
    assert sum(isinstance(u, UserMessageChunk) for _s, u in replayed) == 2
    assert [u.content.text for _s, u in replayed if isinstance(u, UserMessageChunk)] == [
        "Fetch a, b; write c.", "Go on."]  # fmt: skip
    assert sum(isinstance(u, ToolCallStart) for _s, u in replayed) == 3
    assert sum(isinstance(u, AgentMessageChunk) for _s, u in replayed) == 2
    assert kinds[0] == "UserMessageChunk"
    results = [u for u in _progress(ExampleClient(replayed)) if u.status != "in_progress"]
    assert [(u.tool_call_id, u.status) for u in results] == [
        ("call-t0-s0-0", "completed"), ("call-t0-s0-1", "completed"),
        ("call-t0-s0-2", "failed")]  # fmt: skip


def test_agent_usage_errors_are_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "missing.toml"
    done = subprocess.run(
        [sys.executable, "-m", "faultlab.runtime.acp", str(missing), "--sessions-dir",
         str(tmp_path / "s")], stdin=subprocess.DEVNULL, capture_output=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stdout == b""  # stdout is the protocol
    lines = done.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("faultlab.runtime.acp: error: ")
    assert str(missing) in lines[0]
