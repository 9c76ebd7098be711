# Scripted tool bodies: latency (scenario/timing.py), nested calls (through
# the dispatcher, so they pass the `tools/execute` chain and carry their
# parent's call id), the side effect in the world ledger, and the scripted
# result.
from __future__ import annotations

from typing import Any, Protocol

from faultlab.probe import PROBE
from faultlab.runtime.calls import ToolCall, ToolResult
from faultlab.runtime.events import TOOL_FAILED
from faultlab.runtime.ledger import WorldLedger
from faultlab.scenario import Scenario, ToolSpec
from faultlab.scenario.timing import BodyClock

__all__ = ["NestedDispatcher", "ScriptedTools", "ToolSafety", "Tools"]


class NestedDispatcher(Protocol):
    async def dispatch_nested(
        self, parent: ToolCall, name: str, arguments: dict[str, Any]
    ) -> ToolResult: ...


class ToolSafety(Protocol):
    """What the loop and crash repair need to know about a tool."""

    @property
    def parallel_safe(self) -> bool: ...

    @property
    def safe_to_retry(self) -> bool: ...


class Tools(Protocol):
    """The tool bodies the loop dispatches to: the scenario's scripted ones, or
    MCP servers (faultlab/runtime/httpagent/tools.py)."""

    @property
    def names(self) -> tuple[str, ...]: ...

    def spec(self, name: str) -> ToolSafety | None: ...

    async def run(self, call: ToolCall, dispatcher: NestedDispatcher) -> ToolResult: ...


class ScriptedTools:
    """Runs the bodies of a scenario's tools."""

    def __init__(self, scenario: Scenario, ledger: WorldLedger) -> None:
        self._specs = {spec.name: spec for spec in scenario.tools}
        self.ledger = ledger
        self.started: list[str] = []  # call ids whose body started, in order
        self._clock = BodyClock()

    def spec(self, name: str) -> ToolSpec | None:
        return self._specs.get(name)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._specs)

    async def run(self, call: ToolCall, dispatcher: NestedDispatcher) -> ToolResult:
        spec = self._specs.get(call.name)
        if spec is None:
            text = f"Tool {call.name!r} does not exist (tools: {', '.join(self._specs)})."
            return ToolResult(text, is_error=True, error_code=TOOL_FAILED)
        self.started.append(call.call_id)
        self._clock.started(spec.name)
        result = await self._body(spec, call, dispatcher)
        self._clock.returned(spec.name)
        return result

    async def _body(self, spec: ToolSpec, call: ToolCall,
                    dispatcher: NestedDispatcher) -> ToolResult:  # fmt: skip
        await self._clock.latency(spec)
        if spec.asks_retry(call.arguments):  # rejected before any nested call or effect
            return ToolResult(spec.retry_message, is_error=True, error_code=TOOL_FAILED)
        for nested in spec.calls:
            await dispatcher.dispatch_nested(call, nested.tool, dict(nested.arguments))
        if spec.effect == "ledger":
            key = call.call_id if spec.accepts_idempotency_key else None
            applied = self.ledger.apply(
                call_id=call.call_id, tool=spec.name, arguments=call.arguments, key=key
            )
            if PROBE.enabled:
                PROBE.reach(
                    "tool/effect", callId=call.call_id, tool=spec.name, applied=applied,
                    parentCallId=call.parent_call_id,
                )  # fmt: skip
        content = spec.result or "ok"
        if spec.observes is not None:
            content = (
                f"{content}: {self.ledger.count(spec.observes)} {spec.observes} effect(s) applied"
            )
        if spec.fails:
            return ToolResult(content, is_error=True, error_code=TOOL_FAILED)
        return ToolResult(content)
