# The SDK side of the MCP tool server (`mcptools` is its command line,
# `scripted` its tool bodies): the `mcp` low-level Server, the stdio and streamable-HTTP
# transports, and the one place that sees a reply leave for the agent, where
# `tool/replied` is reported.  Kept apart so that `mcptools` checks its input
# and fails fast without paying for the SDK's imports.
from __future__ import annotations

import asyncio
import os
import socket
import sys
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any, NoReturn, cast

import anyio
import mcp_types as types
import orjson
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server

import faultlab
from faultlab.lab.servers.gate import GateClient, GateClosed
from faultlab.lab.servers.ledger import LedgerWriter
from faultlab.lab.servers.scripted import EXIT_GATE_CLOSED, Reach, ToolRunner, tool_definitions
from faultlab.scenario import Scenario

__all__ = ["build_server", "serve"]


def _gate_closed(boundary: str) -> NoReturn:
    # Do not apply, do not reply, do not linger: the agent is dead or dying.
    os.write(2, f"faultlab-mcp: killed while held at {boundary}; exiting\n".encode())
    os._exit(EXIT_GATE_CLOSED)


def _async_reach(gate: GateClient, *, enabled: bool) -> Reach:
    async def reach(boundary: str, **detail: Any) -> int:
        if not enabled:
            return 0
        try:  # the client blocks while the lab holds: keep the loop serving meanwhile
            return await asyncio.to_thread(lambda: gate.reach(boundary, **detail))
        except GateClosed:
            _gate_closed(boundary)
        except OSError:
            _gate_closed(f"{boundary} (gate socket lost)")

    return reach


class _ReplyWatch:
    """Reports `tool/replied` once the response to a finished tools/call has
    been handed to the OS for the agent (flushed to the stdout pipe, or its
    HTTP body given to the server's socket), by watching outgoing messages."""

    def __init__(self, reach: Reach) -> None:
        self._reach = reach
        self.pending: MutableMapping[Any, dict[str, Any]] = {}  # JSON-RPC id -> detail

    async def sent(self, data: bytes | str) -> None:
        if not self.pending:
            return
        for line in data.splitlines():
            try:
                message = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if isinstance(message, dict) and ("result" in message or "error" in message):
                detail = self.pending.pop(message.get("id"), None)
                if detail is not None:
                    await self._reach("tool/replied", **detail)


def build_server(runner: ToolRunner, scenario: Scenario, watch: _ReplyWatch) -> Server[Any]:
    tools = [types.Tool.model_validate(d) for d in tool_definitions(scenario)]

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        # A call the server received runs to its end even if the agent goes
        # away meanwhile (its stdin closes and the SDK cancels the request):
        # what a real tool does, and what `sigkill-agent` must show when
        # the agent started this server in a process group of its own.
        with anyio.CancelScope(shield=True):
            outcome = await runner.call(params.name, dict(params.arguments or {}))
        if ctx.request_id is not None:
            watch.pending[ctx.request_id] = outcome.replied
        return types.CallToolResult(
            content=[types.TextContent(text=outcome.text)], is_error=outcome.is_error
        )

    return Server("faultlab-tools", version=faultlab.__version__,
                  on_list_tools=list_tools, on_call_tool=call_tool)  # fmt: skip


class _WatchedStdout:
    """The stdout the SDK's stdio transport writes to: a private duplicate of
    fd 1 (fd 1 itself now points at stderr, so stray output misses the wire),
    telling the watch what each flush put on the pipe."""

    def __init__(self, watch: _ReplyWatch) -> None:
        wire = os.dup(1)
        os.dup2(2, 1)
        self._file = anyio.wrap_file(open(wire, "w", encoding="utf-8"))  # noqa: SIM115
        self._unflushed: list[str] = []
        self._watch = watch

    async def write(self, text: str) -> int:
        self._unflushed.append(text)
        return await self._file.write(text)

    async def flush(self) -> None:
        await self._file.flush()
        text, self._unflushed = "".join(self._unflushed), []
        await self._watch.sent(text)


async def _serve_stdio(server: Server[Any], watch: _ReplyWatch) -> None:
    stdout = cast("anyio.AsyncFile[str]", _WatchedStdout(watch))
    async with stdio_server(stdout=stdout) as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


async def _serve_http(
    server: Server[Any], watch: _ReplyWatch, *, port: int, url_file: Path | None
) -> None:
    import uvicorn

    # JSON responses (not SSE): one body per reply, so the watch sees it whole.
    app = server.streamable_http_app(json_response=True, host="127.0.0.1")

    async def watched(scope: Any, receive: Any, send: Any) -> None:
        async def send_watched(message: Any) -> None:
            await send(message)
            if message.get("type") == "http.response.body":
                await watch.sent(message.get("body", b""))

        await app(scope, receive, send_watched if scope.get("type") == "http" else send)

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind(("127.0.0.1", port))
    except OSError as exc:
        os.write(2, f"faultlab-mcp: cannot listen on port {port}: {exc.strerror}\n"
                 .encode())  # fmt: skip
        os._exit(2)
    listener.listen(64)
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/mcp"
    config = uvicorn.Config(watched, log_level="warning", lifespan="on", access_log=False)
    http = uvicorn.Server(config)
    serving = asyncio.create_task(http.serve(sockets=[listener]))
    while not http.started and not serving.done():
        await asyncio.sleep(0.005)
    if http.started:
        if url_file is not None:
            partial = url_file.with_name(url_file.name + ".partial")
            partial.write_text(url + "\n")
            partial.replace(url_file)
        else:
            print(f"faultlab-mcp: serving {url}", file=sys.stderr, flush=True)
    await serving


async def serve(
    scenario: Scenario, ledger: LedgerWriter, gate: GateClient, *, gated: bool,
    transport: str = "stdio", port: int = 0, url_file: Path | None = None,
) -> None:  # fmt: skip
    """Serve until the agent closes stdio (or, over HTTP, until signalled).
    `gated`: report boundaries to `gate` (False: standalone, nothing reported)."""
    reach = _async_reach(gate, enabled=gated)
    watch = _ReplyWatch(reach)
    server = build_server(ToolRunner(scenario, ledger, reach), scenario, watch)
    if transport == "http":
        await _serve_http(server, watch, port=port, url_file=url_file)
    else:
        await _serve_stdio(server, watch)
