# The tool-server relay (faultlab/lab/servers/toolrelay.py) as an agent and
# the lab meet it: the command a rig hands the agent starts the shim, which
# gets a tool server forked on its pipes (a real MCP session through the
# SDK's own client, a real ledger), leaves with the server's status, takes
# its server with it when killed, and execs the tool server itself when no
# relay answers; a peer that does not speak the shim's protocol starts nothing.
from __future__ import annotations

import asyncio
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from faultlab.lab.process.reference import read_ledger
from faultlab.lab.servers.rig import ServerRig
from faultlab.lab.servers.toolrelay import SHIM

pytestmark = pytest.mark.realprocess

ROOT = Path(__file__).resolve().parents[4]
PAYMENT = str(ROOT / "scenarios" / "payment.toml")


@pytest.fixture
def rig(monkeypatch: pytest.MonkeyPatch) -> Iterator[ServerRig]:
    monkeypatch.delenv("FAULTLAB_TOOL_FORK", raising=False)
    # AF_UNIX paths are limited to ~107 bytes; pytest's tmp_path can exceed it.
    with tempfile.TemporaryDirectory(prefix="flrelay-") as name, \
            ServerRig(Path(name) / "case", None, timeout=30) as made:  # fmt: skip
        yield made


def until(condition: Callable[[], bool], what: str, within: float = 30.0) -> None:
    deadline = time.monotonic() + within
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {within:g} s")
        time.sleep(0.02)


def closed(peer: socket.socket) -> bool:
    """Whether the relay hung up on `peer` (a close, or a reset when it left
    bytes unread)."""
    try:
        return peer.recv(16) == b""
    except ConnectionResetError:
        return True


def test_the_agent_gets_a_forked_tool_server_through_the_shim(rig: ServerRig) -> None:
    command = rig.tool_server(PAYMENT)
    assert command[1:4] == ("-I", "-S", SHIM) and command[5] == "--"
    (relay,) = rig.relays

    async def body() -> None:
        params = StdioServerParameters(command=command[0], args=list(command[1:]))
        async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            (charge,) = (await client.list_tools()).tools
            assert charge.name == "charge_card"
            (server,) = relay.servers()
            assert psutil.Process(server).ppid() == relay.server.pid  # forked, not exec'd
            await client.call_tool("charge_card", {"amount": 5, "currency": "EUR"})

    asyncio.run(asyncio.wait_for(body(), 60))
    assert [r["tool"] for r in read_ledger(rig.ledger) if "tool" in r] == ["charge_card"]
    until(lambda: relay.servers() == [], "the server ends with its session")


@contextmanager
def shim_with_its_server(rig: ServerRig) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    """A shim started as an agent starts it (its stdio pipes held here), once
    its relay has a server forked for it: the shim and the server's pid."""
    command = rig.tool_server(PAYMENT)
    (relay,) = rig.relays
    shim = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        until(lambda: len(relay.servers()) == 1, "a server forked for the shim")
        yield shim, relay.servers()[0]
    finally:
        shim.kill()
        shim.wait(30)


def test_a_killed_shim_takes_its_server_with_it_at_once(rig: ServerRig) -> None:
    with shim_with_its_server(rig) as (shim, server):
        shim.send_signal(signal.SIGKILL)
        shim.wait(30)
        rig.kill_orphaned_tools()  # what the drive does before the gate lets calls go on
        assert rig.relays[0].servers() == [] and not psutil.pid_exists(server)


def test_a_signal_to_the_shim_reaches_its_server(rig: ServerRig) -> None:
    with shim_with_its_server(rig) as (shim, _server):
        shim.send_signal(signal.SIGTERM)
        assert shim.wait(30) == -signal.SIGTERM  # the server's own death, passed back
        until(lambda: rig.relays[0].servers() == [], "the server is gone")


def test_a_peer_that_is_not_a_shim_starts_nothing(rig: ServerRig) -> None:
    rig.tool_server(PAYMENT)
    (relay,) = rig.relays
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as peer:
        peer.connect(str(relay.path))
        peer.sendall(b"tools\n")  # the right words, but no pipes with them
        assert closed(peer)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as peer:
        peer.connect(str(relay.path))
        socket.send_fds(peer, [b"run /bin/sh\n"], [0, 1, 2])
        assert closed(peer)
    assert len(relay.refused) == 2 and relay.servers() == []


def test_without_a_relay_the_shim_execs_the_command_it_was_given(tmp_path: Path) -> None:
    fallback = [sys.executable, "-c", "print('the tool server, exec\\'d')"]
    shim = [sys.executable, "-I", "-S", SHIM, str(tmp_path / "none"), "--", *fallback]
    done = subprocess.run(shim, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0 and done.stdout == "the tool server, exec'd\n", done.stderr
