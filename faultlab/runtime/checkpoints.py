# Checkpoint policies: plugins that decide when the persistence coordinator
# flushes.  `semantic` (the default) flushes at the three points where a crash
# would otherwise lose the truth about an external action:
#   1. after `request/header` is logged, before the model stream is built;
#   2. after a top-level `tool/call` is recorded, before the tool body runs;
#   3. after each step (assistant message and ordered results recorded);
# and fails closed when a flush is rejected.  The loop's own flush after
# `turn/end` closes every turn whatever the policy.  `turn-only` adds nothing;
# `every-event` flushes after every append as well as at the semantic points.
from __future__ import annotations

import asyncio
from typing import Any

from faultlab.runtime.calls import ToolCall, ToolResult, aborted_before_dispatch, checkpoint_failed
from faultlab.runtime.host import (
    AGENT_POST_STEP,
    LLM_STREAM,
    SESSION_APPENDED,
    TOOLS_EXECUTE,
    Disposer,
    Host,
    Next,
    Plugin,
    combine,
)
from faultlab.runtime.persistence import FlushError, PersistenceCoordinator

__all__ = ["POLICIES", "every_event_policy", "policy_plugin", "semantic_policy", "turn_only_policy"]


async def _let_signals_land() -> None:
    # Turn 1 runs the wakeup fd's reader (queued behind this task); turn 2
    # resumes this task after it.
    await asyncio.sleep(0)
    await asyncio.sleep(0)


def semantic_policy(coordinator: PersistenceCoordinator) -> Plugin:
    async def request_checkpoint(request: Any, next_: Next) -> Any:
        # A rejected flush raises FlushError here: the model is never called.
        await coordinator.flush()
        return await next_(request)

    async def tool_checkpoint(call: ToolCall, next_: Next) -> ToolResult:
        if call.nested:
            covered: ToolResult = await next_(call)  # the outer call's checkpoint covers it
            return covered
        if call.cancel.is_cancelled():
            return aborted_before_dispatch(call)
        try:
            await coordinator.flush()
        except FlushError as exc:
            return checkpoint_failed(call, str(exc))
        # Cancellation may have landed while the flush was pending.  A stop
        # signal reaches the token only through the event loop (its wakeup fd
        # is read by a loop callback), and a flush with nothing left to write
        # (every-event made the call durable on append) never yields: two loop
        # turns let a signal the process has already received land first.
        await _let_signals_land()
        if call.cancel.is_cancelled():
            return aborted_before_dispatch(call)
        result: ToolResult = await next_(call)
        return result

    async def post_step_checkpoint(_step: Any) -> None:
        # FlushError propagates: the loop stops the turn before another request.
        await coordinator.flush()

    def install(host: Host) -> Disposer:
        return combine(
            [
                host.use(LLM_STREAM, request_checkpoint),
                host.use(TOOLS_EXECUTE, tool_checkpoint),
                host.on(AGENT_POST_STEP, post_step_checkpoint),
            ]
        )

    return install


def turn_only_policy(coordinator: PersistenceCoordinator) -> Plugin:
    def install(host: Host) -> Disposer:
        return combine([])

    return install


def every_event_policy(coordinator: PersistenceCoordinator) -> Plugin:
    """Flush after every append, on top of the semantic checkpoints.  Flushing
    more never makes a checkpoint redundant: the tool checkpoint is also where
    a cancellation that landed while the call's flush was pending is noticed
    (G9), and the request checkpoint keeps the model from being called after a
    rejected flush.  Where the append's own flush already made everything
    durable, the semantic flush is an empty barrier."""
    semantic = semantic_policy(coordinator)

    async def flush_after_append(_event: Any) -> None:
        await coordinator.flush()

    def install(host: Host) -> Disposer:
        return combine([host.on(SESSION_APPENDED, flush_after_append), semantic(host)])

    return install


POLICIES = {
    "semantic": semantic_policy,
    "turn-only": turn_only_policy,
    "every-event": every_event_policy,
}


def policy_plugin(name: str, coordinator: PersistenceCoordinator) -> Plugin:
    try:
        factory = POLICIES[name]
    except KeyError:
        raise ValueError(f"unknown policy {name!r} (policies: {', '.join(POLICIES)})") from None
    return factory(coordinator)
