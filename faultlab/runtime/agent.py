# The agent loop: a turn is a user message and steps; a step logs its
# request, streams the model through the `llm/stream` chain, records the
# assistant message, dispatches its tool calls, closes with `step/end` and the
# `agent/post-step` listeners, and the turn goes on while the model asks for
# tools.  `turn/end` is followed by the loop's own flush.
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from faultlab.probe import PROBE
from faultlab.runtime.cancel import CancelToken
from faultlab.runtime.dispatch import ToolDispatcher
from faultlab.runtime.events import (
    ASSISTANT_CHUNK,
    ASSISTANT_MESSAGE,
    REQUEST_HEADER,
    STEP_END,
    STEP_START,
    TURN_END,
    TURN_START,
    USER_MESSAGE,
    Event,
)
from faultlab.runtime.history import build_messages, digest, tool_calls_of
from faultlab.runtime.host import AGENT_POST_STEP, LLM_STREAM, SESSION_APPENDED, Host
from faultlab.runtime.model import Model, ModelRequest, Stream
from faultlab.runtime.persistence import FlushError, PersistenceCoordinator
from faultlab.runtime.session import SessionLog
from faultlab.runtime.tools import Tools

__all__ = ["Agent", "StepRecord"]

Say = Callable[[str], None]


class StepRecord:
    """What `agent/post-step` listeners receive."""

    def __init__(self, turn: int, step: int, message: dict[str, Any], results: int) -> None:
        self.turn = turn
        self.step = step
        self.message = message
        self.results = results


class Agent:
    """Runs turns of a scripted session on a host."""

    def __init__(
        self,
        *,
        log: SessionLog,
        coordinator: PersistenceCoordinator,
        host: Host,
        model: Model,
        tools: Tools,
        pool_size: int,
        say: Say | None = None,
    ) -> None:
        self.log = log
        self.coordinator = coordinator
        self.host = host
        self.model = model
        self.tools = tools
        self.cancel = CancelToken()
        self._say = say or (lambda _text: None)
        self._step_open = False
        self._dispatcher = ToolDispatcher(
            host=host,
            tools=tools,
            append=log.append,
            settle=self._settle,
            cancel=self.cancel,
            pool_size=pool_size,
        )

    async def record(self, type_: str, data: dict[str, Any]) -> Event:
        """Append one event and let `session/appended` listeners see it."""
        event = self.log.append(type_, data)
        await self._settle(event)
        return event

    async def _settle(self, event: Event) -> None:
        if self.host.has_listeners(SESSION_APPENDED):
            await self.host.emit(SESSION_APPENDED, event)

    def next_turn_number(self) -> int:
        for event in reversed(self.log.events):
            if event.type == TURN_START:
                return int(event.data["turn"]) + 1
        return 0

    async def run_turn(self, user_text: str, *, script_turn: int, script_step: int) -> str:
        """Run one turn; return its end reason.  Raise FlushError if it could not be closed."""
        turn = self.next_turn_number()
        failure: FlushError | None = None
        reason = "completed"
        try:
            await self.record(
                TURN_START, {"turn": turn, "scriptTurn": script_turn, "scriptStep": script_step}
            )
            await self.record(USER_MESSAGE, {"turn": turn, "message": user_text})
            if PROBE.enabled:
                PROBE.reach("turn/started", turn=turn)
            self._say(f"turn {turn}: user: {user_text}")
            step = 0
            while True:
                if self.cancel.is_cancelled():
                    reason = "cancelled"
                    break
                wants_tools = await self._run_step(turn, step, script_turn, script_step + step)
                step += 1
                if not wants_tools:
                    reason = "cancelled" if self.cancel.is_cancelled() else "completed"
                    break
        except FlushError as exc:
            failure = exc
            reason = "error"
        end: dict[str, Any] = {"turn": turn, "reason": {"kind": reason}}
        if failure is not None:
            end["reason"]["message"] = str(failure)
            self.log.append(TURN_END, end)  # in memory; the flush below reports the disk
        else:
            await self.record(TURN_END, end)
        if PROBE.enabled:
            PROBE.reach("turn/logged", turn=turn, reason=reason)
        await self.coordinator.flush()
        if PROBE.enabled:
            PROBE.reach("turn/durable", turn=turn)
        self._say(f"turn {turn}: {reason}")
        if failure is not None:
            raise failure
        return reason

    async def _run_step(self, turn: int, step: int, script_turn: int, script_step: int) -> bool:
        await self.record(STEP_START, {"turn": turn, "step": step})
        self._step_open = True
        try:
            return await self._step_body(turn, step, script_turn, script_step)
        except FlushError:
            # Fail closed: close the step in memory, no further request.
            if self._step_open:
                self.log.append(STEP_END, {"turn": turn, "step": step})
                self._step_open = False
            raise

    async def _step_body(self, turn: int, step: int, script_turn: int, script_step: int) -> bool:
        request_id = f"req-t{turn}-s{step}"
        messages = build_messages(self.log.events)
        message_digest = digest(messages)
        envelope = {
            "model": self.model.name,
            "params": {"scriptTurn": script_turn, "scriptStep": script_step},
            "tools": list(self.tools.names),
            "messageCount": len(messages),
            "digest": message_digest,
        }
        header = await self.record(
            REQUEST_HEADER,
            {"turn": turn, "step": step, "requestId": request_id, "envelope": envelope},
        )
        if PROBE.enabled:
            PROBE.reach(
                "request/logged", requestId=request_id, seq=header.seq, digest=message_digest
            )
        request = ModelRequest(
            request_id,
            turn,
            step,
            script_turn,
            script_step,
            messages,
            self.tools.names,
            self.cancel,
        )
        stream: Stream = await self.host.call(LLM_STREAM, request, self._open_stream)
        index = 0
        async for delta in stream:
            await self.record(
                ASSISTANT_CHUNK, {"turn": turn, "step": step, "index": index, "delta": delta}
            )
            if PROBE.enabled:
                PROBE.reach("model/chunk", requestId=request_id, index=index)
            index += 1
            if self.cancel.is_cancelled():
                break
        message = stream.message
        if message is None:
            # Cancelled mid-stream: the answer was never completed.
            await self._end_step(turn, step, {"role": "assistant", "content": []}, 0)
            return False
        recorded = self.log.append(
            ASSISTANT_MESSAGE, {"turn": turn, "step": step, "message": message}
        )
        calls = tool_calls_of(message)
        try:
            await self._settle(recorded)
        except FlushError as exc:
            if calls:
                # Fail closed without leaving a call unanswered: a closed turn
                # whose assistant message asks for tools that got no result is a
                # history every provider rejects (G7).  Raises `exc`.
                await self._dispatcher.dispatch_step(turn, step, recorded.seq, calls, failed=exc)
            raise
        if PROBE.enabled:
            PROBE.reach(
                "assistant/recorded",
                requestId=request_id,
                seq=recorded.seq,
                callIds=[call["id"] for call in calls],
            )
        self._say(_describe(turn, step, message))
        results = []
        if calls:
            results = await self._dispatcher.dispatch_step(turn, step, recorded.seq, calls)
            for call, result in zip(calls, results, strict=True):
                status = f"error {result.error_code}" if result.is_error else "ok"
                self._say(f"  tool {call['name']} {call['id']}: {status}")
        await self._end_step(turn, step, message, len(results))
        return bool(calls)

    async def _open_stream(self, request: ModelRequest) -> Stream:
        # Innermost link of `llm/stream`: past every checkpoint, the model is called.
        if PROBE.enabled:
            PROBE.reach(
                "request/durable",
                requestId=request.request_id,
                digest=digest(request.messages),
                messageCount=len(request.messages),
            )
        return self.model.stream(request)

    async def _end_step(self, turn: int, step: int, message: dict[str, Any], results: int) -> None:
        self._step_open = False
        await self.record(STEP_END, {"turn": turn, "step": step})
        if PROBE.enabled:
            PROBE.reach("step/logged", turn=turn, step=step)
        await self.host.emit(AGENT_POST_STEP, StepRecord(turn, step, message, results))
        if PROBE.enabled:
            PROBE.reach("step/durable", turn=turn, step=step)


def _describe(turn: int, step: int, message: dict[str, Any]) -> str:
    text = "".join(b["text"] for b in message["content"] if b["type"] == "text")
    shown = text if len(text) <= 60 else f"{text[:57]}..."
    calls = ", ".join(f"{c['name']}({c['id']})" for c in tool_calls_of(message))
    return f"  step {step}: model: {shown!r}" + (f" -> {calls}" if calls else "")
