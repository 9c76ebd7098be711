# faultlab's MCP tool server: a scenario's scripted tools served to a
# black-box agent over MCP (stdio or streamable HTTP), built on the official
# `mcp` SDK's low-level `Server`.  The agent spawns it from its MCP config, so
# it runs as the lab's grandchild and reports to the lab only through the
# gate's Unix socket: every call's `tool/received` before its effect,
# `tool/applied` after the ledger fsync, `tool/replied` after the reply's bytes
# left for the agent (docs/mcp-tools.md).  The ground truth of what the tools
# did is the world ledger, written in the runtime's record format.
#
# Start-up is paid per agent process start: the SDK (about half a second of
# imports) is imported only after the arguments, the scenario, the ledger and
# the gate socket were checked, so bad input fails at once.
from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from faultlab.lab.errors import LabUsageError
from faultlab.lab.servers.gate import GateClient, GateClosed
from faultlab.lab.servers.ledger import LedgerWriter
from faultlab.scenario import Scenario, ScenarioError, ToolSpec, load_scenario

__all__ = [
    "EXIT_GATE_CLOSED",
    "EXIT_USAGE",
    "IDEMPOTENCY_KEY",
    "ServerOptions",
    "ToolCallOutcome",
    "Reach",
    "ToolRunner",
    "main",
    "parse_args",
    "tool_definitions",
]

EXIT_USAGE = 2
EXIT_GATE_CLOSED = 3  # the lab killed the agent while this server held
IDEMPOTENCY_KEY = "idempotency_key"
_JSON_TYPES: tuple[tuple[type, str], ...] = (
    (bool, "boolean"),  # before int: bool is an int
    (int, "integer"),
    (float, "number"),
    (str, "string"),
    (list, "array"),
    (dict, "object"),
)


# --- the tools as MCP sees them -------------------------------------------------


def _scripted_arguments(scenario: Scenario) -> dict[str, dict[str, set[str]]]:
    """tool -> argument -> JSON types, over every call the scenario scripts
    (steps, their branches, and tools' nested calls)."""
    seen: dict[str, dict[str, set[str]]] = {}

    def add(tool: str, arguments: dict[str, Any]) -> None:
        props = seen.setdefault(tool, {})
        for name, value in arguments.items():
            kind = next((k for t, k in _JSON_TYPES if isinstance(value, t)), None)
            props.setdefault(name, set()).update({kind} if kind else set())

    for turn in scenario.turns:
        for step in turn.steps:
            for call in step.tool_calls:
                add(call.tool, call.arguments)
            for branch in step.branches:
                for call in branch.tool_calls:
                    add(call.tool, call.arguments)
    for spec in scenario.tools:
        for nested in spec.calls:
            add(nested.tool, nested.arguments)
    return seen


def _description(spec: ToolSpec) -> str:
    if spec.read_only:
        effect = "Read-only: changes nothing."
    elif spec.effect == "none":
        effect = "Has no side effect."
    else:
        effect = "Has a side effect in the outside world" + (
            "; idempotent: repeating it with the same arguments changes nothing more."
            if spec.idempotent
            else "; NOT idempotent: every call applies it again."
        )
    key = (
        f" Pass a stable `{IDEMPOTENCY_KEY}`: a key applied before is not applied again."
        if spec.accepts_idempotency_key
        else ""
    )
    return f"Scripted faultlab tool `{spec.name}`. {effect}{key}"


def tool_definitions(scenario: Scenario) -> list[dict[str, Any]]:
    """One MCP tool definition (the `tools/list` wire shape) per ToolSpec."""
    arguments = _scripted_arguments(scenario)
    tools = []
    for spec in scenario.tools:
        props: dict[str, Any] = {}
        for name, kinds in sorted(arguments.get(spec.name, {}).items()):
            ordered = sorted(kinds)
            props[name] = {"type": ordered[0]} if len(ordered) == 1 else (
                {"type": ordered} if ordered else {}
            )  # fmt: skip
        if spec.accepts_idempotency_key:
            props[IDEMPOTENCY_KEY] = {
                "type": "string",
                "description": "A stable key for this effect; a repeated key is not applied.",
            }
        effect = spec.effect != "none"
        tools.append({
            "name": spec.name,
            "description": _description(spec),
            "inputSchema": {"type": "object", "properties": props, "additionalProperties": True},
            "annotations": {
                "readOnlyHint": spec.read_only,
                "idempotentHint": spec.idempotent,
                "destructiveHint": effect and not spec.idempotent,
                # The ledger stands for the outside world (a card network, a
                # deploy target); a tool without an effect touches nothing.
                "openWorldHint": effect,
            },
        })  # fmt: skip
    return tools


# --- the calls ------------------------------------------------------------------

Reach = Callable[..., Awaitable[int]]


@dataclass(frozen=True, slots=True)
class ToolCallOutcome:
    """A call's result as the agent gets it, and what to report once it is sent."""

    text: str
    is_error: bool
    replied: dict[str, Any]  # the `tool/replied` detail


class ToolRunner:
    """Runs a scenario's tool bodies against the ledger, reporting each call's
    boundaries through `reach` (an awaitable `GateClient.reach`)."""

    def __init__(self, scenario: Scenario, ledger: LedgerWriter, reach: Reach) -> None:
        self._specs = {spec.name: spec for spec in scenario.tools}
        self._ledger = ledger
        self._reach = reach
        self._ids = itertools.count(1)

    async def call(self, name: str, arguments: dict[str, Any]) -> ToolCallOutcome:
        """Raises GateClosed when the lab killed the agent while a boundary held."""
        call_id = f"mcp-{next(self._ids)}"
        detail = {"callId": call_id, "tool": name, "arguments": arguments}
        await self._reach("tool/received", **detail)
        spec = self._specs.get(name)
        if spec is None:
            text = f"Tool {name!r} does not exist (tools: {', '.join(self._specs)})."
            return ToolCallOutcome(text, True, {"callId": call_id, "tool": name, "isError": True})
        if spec.latency_ms:
            await asyncio.sleep(spec.latency_ms / 1000)
        for k, nested in enumerate(spec.calls, 1):
            # A tool body's own calls run inside it: their effects land in the
            # ledger, under the parent's call id; they are not MCP calls.
            self._apply(self._specs.get(nested.tool), f"{call_id}.{k}", dict(nested.arguments))
        if spec.effect == "ledger":
            key = arguments.get(IDEMPOTENCY_KEY) if spec.accepts_idempotency_key else None
            applied = self._apply(spec, call_id, arguments, key=str(key) if key else None)
            await self._reach("tool/applied", **detail, applied=applied, key=key)
        text = spec.result or "ok"
        if spec.observes is not None:
            text = f"{text}: {self._ledger.count(spec.observes)} {spec.observes} effect(s) applied"
        return ToolCallOutcome(text, spec.fails, {"callId": call_id, "tool": name,
                                                  "isError": spec.fails})  # fmt: skip

    def _apply(
        self, spec: ToolSpec | None, call_id: str, arguments: dict[str, Any], *,
        key: str | None = None,
    ) -> bool:  # fmt: skip
        if spec is None or spec.effect != "ledger":
            return False
        return self._ledger.apply(call_id=call_id, tool=spec.name, arguments=arguments, key=key)


# --- the command line -----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ServerOptions:
    scenario: Path
    ledger: Path
    gate: Path | None = None
    transport: str = "stdio"
    port: int = 0
    url_file: Path | None = None


class _OneLineParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise LabUsageError(message)


def parse_args(argv: list[str] | None = None) -> ServerOptions:
    """Raises LabUsageError on bad arguments."""
    parser = _OneLineParser(prog="python -m faultlab.lab.servers.mcptools",
                            description="Serve a scenario's tools over MCP.")  # fmt: skip
    parser.add_argument("scenario", type=Path)
    parser.add_argument("--ledger", type=Path, required=True)
    parser.add_argument("--gate", type=Path, default=None, help="the lab's gate socket")
    parser.add_argument("--transport", choices=("stdio", "http"), default="stdio")
    parser.add_argument("--port", type=int, default=0, help="http: 0 = ephemeral")
    parser.add_argument("--url-file", type=Path, default=None, help="http: write the URL here")
    ns = parser.parse_args(argv)
    if not 0 <= ns.port <= 65535:
        raise LabUsageError(f"--port must be 0 to 65535, not {ns.port}")
    return ServerOptions(ns.scenario, ns.ledger, ns.gate, ns.transport, ns.port, ns.url_file)


def main(argv: list[str] | None = None) -> int:
    try:
        options = parse_args(argv)
        scenario = load_scenario(options.scenario)
        ledger = LedgerWriter(options.ledger)
        try:
            gate = GateClient(options.gate)
        except OSError as exc:
            raise LabUsageError(f"cannot connect to gate socket {options.gate}: "
                                f"{exc.strerror or exc}") from None  # fmt: skip
    except (LabUsageError, ScenarioError) as exc:
        print(f"faultlab-mcp: {exc}", file=sys.stderr)
        return EXIT_USAGE
    from faultlab.lab.servers.mcpserve import serve  # the SDK: imported once input is good

    try:
        asyncio.run(serve(scenario, ledger, gate, options))
    except KeyboardInterrupt:
        return 0
    finally:
        ledger.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
