# The black-box agent's tools: the MCP servers of a Claude-Code-style config
# file ({"mcpServers": {NAME: {"command", "args", "env"}}}), started over stdio
# with the official `mcp` SDK, every tool of every server offered to the model
# as `NAME__TOOL`.  The tools' MCP annotations are the safety information
# crash repair needs: `readOnlyHint` or `idempotentHint` makes a retry after an
# unknown outcome safe; nothing else does.  The SDK starts each server in its
# own session (process group), so a kill of the agent's group alone leaves a
# running tool body to finish; the lab kills the whole tree.
from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client

from faultlab.runtime.calls import ToolCall, ToolResult
from faultlab.runtime.events import TOOL_FAILED
from faultlab.runtime.httpagent.client import ToolDefinition
from faultlab.runtime.tools import NestedDispatcher

__all__ = [
    "SEPARATOR",
    "McpConfigError",
    "McpServerConfig",
    "McpTool",
    "McpTools",
    "connect_tools",
    "load_mcp_config",
]

SEPARATOR = "__"  # offered name: SERVER__TOOL


class McpConfigError(Exception):
    """The MCP config file is missing or malformed."""


@dataclass(frozen=True, slots=True)
class McpServerConfig:
    name: str
    command: str
    args: tuple[str, ...]
    env: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class McpTool:
    """One tool of one server, with what the loop and repair need to know."""

    server: str
    tool: str
    description: str
    input_schema: dict[str, Any]
    read_only: bool
    idempotent: bool

    @property
    def name(self) -> str:
        return f"{self.server}{SEPARATOR}{self.tool}"

    @property
    def parallel_safe(self) -> bool:
        return self.read_only

    @property
    def safe_to_retry(self) -> bool:
        return self.read_only or self.idempotent

    def definition(self) -> ToolDefinition:
        return ToolDefinition(self.name, self.description, self.input_schema)


def load_mcp_config(path: str | os.PathLike[str]) -> tuple[McpServerConfig, ...]:
    try:
        raw = orjson.loads(Path(path).read_bytes())
    except OSError as exc:
        raise McpConfigError(f"{path}: {exc.strerror or exc}") from exc
    except orjson.JSONDecodeError as exc:
        raise McpConfigError(f"{path}: not JSON: {exc}") from exc
    servers = raw.get("mcpServers") if isinstance(raw, dict) else None
    if not isinstance(servers, dict) or not servers:
        raise McpConfigError(f'{path}: needs a non-empty object "mcpServers"')
    found = []
    for name, entry in servers.items():
        if not isinstance(entry, dict) or not isinstance(entry.get("command"), str):
            raise McpConfigError(f'{path}: server {name!r} needs a string "command"')
        if SEPARATOR in name:
            raise McpConfigError(f"{path}: server name {name!r} may not contain {SEPARATOR!r}")
        args = entry.get("args", [])
        env = entry.get("env", {})
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise McpConfigError(f'{path}: server {name!r}: "args" must be a list of strings')
        if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
            raise McpConfigError(f'{path}: server {name!r}: "env" must map names to strings')
        found.append(McpServerConfig(name, entry["command"], tuple(args), tuple(env.items())))
    return tuple(found)


def _text_of(result: types.CallToolResult) -> str:
    parts = []
    for block in result.content:
        if isinstance(block, types.TextContent):
            parts.append(block.text)
        else:
            parts.append(f"[{block.type} content]")
    return "\n".join(parts)


class McpTools:
    """The connected servers' tools, runnable by the loop's dispatcher."""

    def __init__(self, sessions: dict[str, ClientSession], tools: list[McpTool]) -> None:
        self._sessions = sessions
        self._tools = {tool.name: tool for tool in tools}

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._tools)

    def spec(self, name: str) -> McpTool | None:
        return self._tools.get(name)

    def definitions(self) -> list[ToolDefinition]:
        return [tool.definition() for tool in self._tools.values()]

    async def run(self, call: ToolCall, dispatcher: NestedDispatcher) -> ToolResult:
        # Past every checkpoint: the call goes to the server.
        tool = self._tools.get(call.name)
        if tool is None:
            text = f"Tool {call.name!r} does not exist (tools: {', '.join(self._tools)})."
            return ToolResult(text, is_error=True, error_code=TOOL_FAILED)
        result = await self._sessions[tool.server].call_tool(tool.tool, call.arguments)
        text = _text_of(result)
        if result.is_error:
            return ToolResult(text, is_error=True, error_code=TOOL_FAILED)
        return ToolResult(text)


@asynccontextmanager
async def connect_tools(servers: tuple[McpServerConfig, ...]) -> AsyncIterator[McpTools]:
    """Start every server, list its tools, and stop them all on exit."""
    async with AsyncExitStack() as stack:
        sessions: dict[str, ClientSession] = {}
        tools: list[McpTool] = []
        for server in servers:
            params = StdioServerParameters(
                command=server.command, args=list(server.args), env=dict(server.env) or None
            )
            read, write = await stack.enter_async_context(stdio_client(params))
            session = await stack.enter_async_context(ClientSession(read, write))
            await session.initialize()
            sessions[server.name] = session
            listing = await session.list_tools()
            for tool in listing.tools:
                notes = tool.annotations
                tools.append(
                    McpTool(
                        server.name,
                        tool.name,
                        tool.description or "",
                        dict(tool.input_schema),
                        read_only=bool(notes and notes.read_only_hint),
                        idempotent=bool(notes and notes.idempotent_hint),
                    )
                )
        yield McpTools(sessions, tools)
