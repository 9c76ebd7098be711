# Tool dispatch for one step: every call passes the `tools/execute` chain;
# runs of consecutive parallel-safe calls share a bounded pool, other calls
# run alone; results are recorded in the model's order as soon as every
# earlier result is recorded.  Nested calls (a body calling a tool) go through
# the same chain and carry their parent's call id.  When an append cannot be
# made durable (a policy that flushes on append), dispatch fails closed: no
# call starts after that, running bodies finish, every call still gets a
# result in memory, and the failure is raised once the step's results are in.
from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from faultlab.probe import PROBE
from faultlab.runtime.calls import (
    ToolCall,
    ToolResult,
    aborted_before_dispatch,
    checkpoint_failed,
)
from faultlab.runtime.cancel import CancelToken
from faultlab.runtime.events import TOOL_CALL, TOOL_RESULT, Event
from faultlab.runtime.host import TOOLS_EXECUTE, Host
from faultlab.runtime.persistence import FlushError
from faultlab.runtime.tools import Tools

__all__ = ["Appender", "Settler", "ToolDispatcher"]

Appender = Callable[[str, dict[str, Any]], Event]
Settler = Callable[[Event], Awaitable[None]]


class ToolDispatcher:
    """Dispatches the tool calls of assistant messages."""

    def __init__(
        self,
        *,
        host: Host,
        tools: Tools,
        append: Appender,
        settle: Settler,
        cancel: CancelToken,
        pool_size: int,
    ) -> None:
        self._host = host
        self._tools = tools
        self._append = append
        self._settle = settle
        self._failure: FlushError | None = None
        self._cancel = cancel
        self._pool = asyncio.Semaphore(pool_size)
        self._nested_counts: dict[str, int] = {}
        self._call_seqs: dict[str, int] = {}  # call id -> seq of its tool/call event

    async def dispatch_step(
        self, turn: int, step: int, message_seq: int, calls: list[dict[str, Any]],
        *, failed: FlushError | None = None,
    ) -> list[ToolResult]:  # fmt: skip
        """Run `calls` (tool-call blocks in model order) and record their results.
        `failed`: the assistant message itself could not be made durable; no call
        starts, each gets its CHECKPOINT_FAILED result in memory, then it is raised."""
        results: list[ToolResult | None] = [None] * len(calls)
        recorded = 0
        self._failure = failed

        async def record_ready() -> None:
            nonlocal recorded
            while recorded < len(calls) and (result := results[recorded]) is not None:
                block = calls[recorded]
                await self._record_result(turn, step, block, result, message_seq)
                recorded += 1

        index = 0
        while index < len(calls):
            group = [index]
            if self._parallel_safe(calls[index]):
                while index + len(group) < len(calls) and self._parallel_safe(
                    calls[index + len(group)]
                ):
                    group.append(index + len(group))
            pending = {
                asyncio.ensure_future(self._run_top_level(turn, step, calls[i], message_seq)): i
                for i in group
            }
            while pending:
                done, _ = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                # Handle finished calls in model order so recording is deterministic.
                for task in sorted(done, key=pending.__getitem__):
                    results[pending.pop(task)] = task.result()
                await record_ready()
            index += len(group)
        if self._failure is not None:
            raise self._failure
        return [result for result in results if result is not None]

    def _parallel_safe(self, block: dict[str, Any]) -> bool:
        spec = self._tools.spec(block["name"])
        return spec is not None and spec.parallel_safe

    async def _run_top_level(
        self, turn: int, step: int, block: dict[str, Any], message_seq: int
    ) -> ToolResult:
        async with self._pool:
            # A call that never got as far as being logged never starts.
            if self._failure is not None or self._cancel.is_cancelled():
                call = ToolCall(
                    block["id"],
                    block["name"],
                    block["arguments"],
                    turn,
                    step,
                    message_seq,
                    self._cancel,
                )
                if self._failure is not None:
                    return checkpoint_failed(call, str(self._failure))
                return aborted_before_dispatch(call)
            return await self._run(turn, step, block["id"], block["name"], block["arguments"], None)

    async def dispatch_nested(
        self, parent: ToolCall, name: str, arguments: dict[str, Any]
    ) -> ToolResult:
        count = self._nested_counts.get(parent.call_id, 0)
        self._nested_counts[parent.call_id] = count + 1
        call_id = f"{parent.call_id}.{count}"
        return await self._run(parent.turn, parent.step, call_id, name, arguments, parent.call_id)

    async def _run(
        self,
        turn: int,
        step: int,
        call_id: str,
        name: str,
        arguments: dict[str, Any],
        parent_call_id: str | None,
    ) -> ToolResult:
        data: dict[str, Any] = {
            "turn": turn,
            "step": step,
            "callId": call_id,
            "name": name,
            "arguments": arguments,
        }
        if parent_call_id is not None:
            data["parentCallId"] = parent_call_id
        event = self._append(TOOL_CALL, data)
        self._call_seqs[call_id] = event.seq
        call = ToolCall(
            call_id, name, arguments, turn, step, event.seq, self._cancel, parent_call_id
        )
        if not await self._settled(event):
            return checkpoint_failed(call, str(self._failure))
        if PROBE.enabled:
            PROBE.reach("tool/logged", callId=call_id, seq=event.seq, parentCallId=parent_call_id)
        result: ToolResult = await self._host.call(TOOLS_EXECUTE, call, self._execute_body)
        if parent_call_id is not None:
            await self._record(TOOL_RESULT, _result_data(call, result, [event.seq]))
        return result

    async def _settled(self, event: Event) -> bool:
        """Let `session/appended` listeners see `event`; False once durability failed."""
        if self._failure is not None:
            return False
        try:
            await self._settle(event)
        except FlushError as exc:
            self._failure = exc
            return False
        return True

    async def _record(self, type_: str, data: dict[str, Any]) -> None:
        await self._settled(self._append(type_, data))

    async def _execute_body(self, call: ToolCall) -> ToolResult:
        # The innermost link of the chain: past every checkpoint, the body starts.
        if PROBE.enabled:
            PROBE.reach(
                "tool/durable",
                callId=call.call_id,
                seq=call.call_seq,
                parentCallId=call.parent_call_id,
            )
        result = await self._tools.run(call, self)
        if PROBE.enabled:
            PROBE.reach(
                "tool/returned",
                callId=call.call_id,
                parentCallId=call.parent_call_id,
                isError=result.is_error,
            )
        return result

    async def _record_result(
        self, turn: int, step: int, block: dict[str, Any], result: ToolResult, message_seq: int
    ) -> None:
        call = ToolCall(
            block["id"], block["name"], block["arguments"], turn, step, message_seq, self._cancel
        )
        # A result cites its tool/call; a call never logged cites the assistant message.
        sources = [self._call_seqs.get(block["id"], message_seq)]
        await self._record(TOOL_RESULT, _result_data(call, result, sources))


def _result_data(call: ToolCall, result: ToolResult, sources: list[int]) -> dict[str, Any]:
    data: dict[str, Any] = {
        "turn": call.turn,
        "step": call.step,
        "callId": call.call_id,
        "content": result.content,
        "isError": result.is_error,
        "sourceEventSeqs": sources,
    }
    error = result.error()
    if error is not None:
        data["error"] = error
    if call.parent_call_id is not None:
        data["parentCallId"] = call.parent_call_id
    return data
