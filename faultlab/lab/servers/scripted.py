# The scenario's tools as the MCP tool server offers and runs them, apart from
# the SDK: their MCP definitions (schema, annotations) and their bodies
# (latency, nested calls, the ledger effect, the scripted result), each call
# reporting its boundaries through an awaitable `reach`.  No `mcp` import
# here: the command line loads this before it knows its input is good.
from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from faultlab.lab.servers.ledger import LedgerWriter
from faultlab.scenario import Scenario, ToolSpec
from faultlab.scenario.timing import BodyClock

__all__ = [
    "EXIT_GATE_CLOSED",
    "IDEMPOTENCY_KEY",
    "Reach",
    "ToolCallOutcome",
    "ToolRunner",
    "tool_definitions",
]

EXIT_GATE_CLOSED = 3  # the lab killed the agent while the server held
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
        self._clock = BodyClock()

    async def call(self, name: str, arguments: dict[str, Any]) -> ToolCallOutcome:
        """Run one call.  What a closed gate does is `reach`'s business (the
        server's exits the process, so nothing after the held boundary runs)."""
        call_id = f"mcp-{next(self._ids)}"
        detail = {"callId": call_id, "tool": name, "arguments": arguments}
        await self._reach("tool/received", **detail)
        spec = self._specs.get(name)
        if spec is None:
            text = f"Tool {name!r} does not exist (tools: {', '.join(self._specs)})."
            return ToolCallOutcome(text, True, {"callId": call_id, "tool": name, "isError": True,
                                                "text": text})  # fmt: skip
        self._clock.started(name)
        await self._clock.latency(spec)
        for k, nested in enumerate(spec.calls, 1):
            # A tool body's own calls run inside it: their effects land in the
            # ledger, under the parent's call id; they are not MCP calls.
            self._apply(self._specs.get(nested.tool), f"{call_id}.{k}", dict(nested.arguments))
        if spec.effect == "ledger":
            given = arguments.get(IDEMPOTENCY_KEY) if spec.accepts_idempotency_key else None
            key = str(given) if given not in (None, "") else None
            applied = self._apply(spec, call_id, arguments, key=key)
            await self._reach("tool/applied", **detail, applied=applied, key=key)
        text = spec.result or "ok"
        if spec.observes is not None:
            text = f"{text}: {self._ledger.count(spec.observes)} {spec.observes} effect(s) applied"
        self._clock.returned(name)
        return ToolCallOutcome(text, spec.fails, {"callId": call_id, "tool": name,
                                                  "isError": spec.fails, "text": text})  # fmt: skip

    def _apply(
        self, spec: ToolSpec | None, call_id: str, arguments: dict[str, Any], *,
        key: str | None = None,
    ) -> bool:  # fmt: skip
        if spec is None or spec.effect != "ledger":
            return False
        return self._ledger.apply(call_id=call_id, tool=spec.name, arguments=arguments, key=key)
