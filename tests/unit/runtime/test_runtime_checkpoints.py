# The semantic checkpoint rules, one test (or more) per rule.  Each runs the
# real agent loop on real files; the comparison runs under `turn-only` show
# that the assertions can fail.
from __future__ import annotations

import asyncio
import errno
from typing import Any

import pytest
from conftest import RuntimeFactory, scenario_from

from faultlab.runtime.calls import ToolCall
from faultlab.runtime.events import (
    ABORTED_BEFORE_DISPATCH,
    CHECKPOINT_FAILED,
    REQUEST_HEADER,
    STEP_END,
    TOOL_CALL,
    TOOL_RESULT,
    TURN_END,
)
from faultlab.runtime.host import (
    AGENT_POST_STEP,
    LLM_STREAM,
    SESSION_APPENDED,
    TOOLS_EXECUTE,
    Host,
)
from faultlab.runtime.model import ModelRequest, ModelStream
from faultlab.runtime.persistence import FlushError

ONE_TOOL = """
[tools.deploy]
effect = "ledger"
[[turns]]
user = "go"
  [[turns.steps]]
  text = "deploying"
  tool_calls = [{ tool = "deploy" }]
  [[turns.steps]]
  text = "done"
"""

NESTED = """
[tools.outer]
effect = "ledger"
calls = [{ tool = "inner" }, { tool = "inner" }]
[tools.inner]
effect = "ledger"
[[turns]]
user = "go"
  [[turns.steps]]
  tool_calls = [{ tool = "outer" }]
  [[turns.steps]]
  text = "done"
"""


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def seq_of(runtime: Any, type_: str, nth: int = 0) -> int:
    return [e.seq for e in runtime.log.events if e.type == type_][nth]


@pytest.mark.parametrize("policy", ["semantic", "every-event"])
def test_request_flush_completes_before_model_stream_is_constructed(
    make_runtime: RuntimeFactory, policy: str
) -> None:
    runtime = make_runtime(scenario_from(ONE_TOOL), policy=policy)
    seen: list[tuple[int, int]] = []
    original = runtime.model.stream

    def stream(request: ModelRequest) -> ModelStream:
        header = [e for e in runtime.log.events if e.type == REQUEST_HEADER][-1]
        seen.append((header.seq, runtime.coordinator.durable_seq))
        return original(request)

    runtime.model.stream = stream  # type: ignore[method-assign]
    assert run(runtime.run_turn()) == "completed"
    assert len(seen) == 2
    for header_seq, durable in seen:
        assert durable > header_seq, "model stream built before its request/header was durable"


def test_turn_only_constructs_the_model_stream_before_the_request_is_durable(
    make_runtime: RuntimeFactory,
) -> None:
    runtime = make_runtime(scenario_from(ONE_TOOL), policy="turn-only")
    durable_at_call: list[int] = []
    original = runtime.model.stream

    def stream(request: ModelRequest) -> ModelStream:
        durable_at_call.append(runtime.coordinator.durable_seq)
        return original(request)

    runtime.model.stream = stream  # type: ignore[method-assign]
    run(runtime.run_turn())
    assert durable_at_call[0] <= seq_of(runtime, REQUEST_HEADER)


def test_rejected_request_flush_means_the_model_is_never_called(
    make_runtime: RuntimeFactory,
) -> None:
    runtime = make_runtime(scenario_from(ONE_TOOL))
    runtime.backend.arm_failure("write", errno.EIO)
    with pytest.raises(FlushError):
        run(runtime.run_turn())
    assert runtime.model.calls == 0
    assert runtime.tools.started == []
    # Fail-closed keeps every event; the failure was one-shot, so the loop's
    # own turn/end flush wrote all of them, each once, ending in {error}.
    stored = runtime.backend.load().events
    assert [e.seq for e in stored] == list(range(len(runtime.log.events)))
    assert [e.type for e in stored][-3:] == [REQUEST_HEADER, STEP_END, TURN_END]
    assert stored[-1].data["reason"]["kind"] == "error"


def test_tool_flush_completes_before_the_tool_body(make_runtime: RuntimeFactory) -> None:
    runtime = make_runtime(scenario_from(ONE_TOOL))
    at_body: list[int] = []
    original = runtime.tools.run

    async def body(call: ToolCall, dispatcher: Any) -> Any:
        at_body.append(runtime.coordinator.durable_seq)
        return await original(call, dispatcher)

    runtime.tools.run = body  # type: ignore[method-assign]
    run(runtime.run_turn())
    assert at_body == [at_body[0]] and at_body[0] > seq_of(runtime, TOOL_CALL)


def test_rejected_tool_flush_becomes_an_error_result_and_the_body_never_runs(
    make_runtime: RuntimeFactory,
) -> None:
    holder: dict[str, Any] = {}

    def arm_on_tool(host: Host) -> None:
        async def fail_next_flush(call: ToolCall, next_: Any) -> Any:
            holder["runtime"].backend.arm_failure("sync", errno.ENOSPC)
            return await next_(call)

        host.use(TOOLS_EXECUTE, fail_next_flush)  # outermost: runs before the checkpoint

    runtime = make_runtime(scenario_from(ONE_TOOL), before_policy=arm_on_tool)
    holder["runtime"] = runtime
    assert run(runtime.run_turn()) == "completed"
    assert runtime.tools.started == []
    assert runtime.tools.ledger.records == []
    result = next(e for e in runtime.log.events if e.type == TOOL_RESULT)
    assert result.data["isError"] is True
    assert result.data["error"]["code"] == CHECKPOINT_FAILED
    # Nothing of the failed write survives: the file holds each seq once.
    stored = runtime.backend.load().events
    assert [e.seq for e in stored] == list(range(len(stored)))


@pytest.mark.parametrize("recheck", [True, False])
def test_cancellation_during_a_pending_tool_flush_aborts_before_dispatch(
    make_runtime: RuntimeFactory, recheck: bool
) -> None:
    holder: dict[str, Any] = {}

    def cancel_while_flushing(host: Host) -> None:
        async def cancel_soon(call: ToolCall, next_: Any) -> Any:
            # Lands on the loop after the checkpoint's flush has started and
            # before it has returned: the flush is pending.
            asyncio.get_running_loop().call_soon(call.cancel.cancel, "test")
            return await next_(call)

        host.use(TOOLS_EXECUTE, cancel_soon)

    runtime = make_runtime(scenario_from(ONE_TOOL), before_policy=cancel_while_flushing)
    holder["runtime"] = runtime
    if not recheck:
        # The zoo's bug: a checkpoint that does not look at the signal again.
        runtime.policy_disposer()  # type: ignore[misc]

        async def no_recheck(call: ToolCall, next_: Any) -> Any:
            if call.cancel.is_cancelled():
                return None
            await runtime.coordinator.flush()
            return await next_(call)

        runtime.host.use(TOOLS_EXECUTE, no_recheck)
    reason = run(runtime.run_turn())
    assert reason == "cancelled"
    if recheck:
        assert runtime.tools.started == []
        result = next(e for e in runtime.log.events if e.type == TOOL_RESULT)
        assert result.data["error"]["code"] == ABORTED_BEFORE_DISPATCH
        assert runtime.model.calls == 1  # no request after the cancellation
    else:
        assert runtime.tools.started != []


def test_nested_dispatch_triggers_no_extra_flush(make_runtime: RuntimeFactory) -> None:
    nested = make_runtime(scenario_from(NESTED))
    run(nested.run_turn())
    flat = make_runtime(
        scenario_from(NESTED.replace('calls = [{ tool = "inner" }, { tool = "inner" }]', ""))
    )
    run(flat.run_turn())
    assert sum(1 for e in nested.log.events if e.type == TOOL_CALL) == 3
    assert nested.coordinator.flush_count == flat.coordinator.flush_count
    # ... while every-event does flush for them, so the count can tell.
    eager = make_runtime(scenario_from(NESTED), policy="every-event")
    run(eager.run_turn())
    assert eager.coordinator.flush_count > nested.coordinator.flush_count


def test_post_step_flush_covers_the_assistant_message_and_ordered_results(
    make_runtime: RuntimeFactory,
) -> None:
    scenario = scenario_from(
        """
        [tools.a]
        parallel_safe = true
        latency_ms = 20
        [tools.b]
        parallel_safe = true
        [[turns]]
        user = "go"
          [[turns.steps]]
          tool_calls = [{ tool = "a" }, { tool = "b" }]
          [[turns.steps]]
          text = "done"
        """
    )
    runtime = make_runtime(scenario)
    durable_after_post_step: list[int] = []

    async def after_policy(_step: Any) -> None:
        durable_after_post_step.append(runtime.coordinator.durable_seq)

    runtime.host.on(AGENT_POST_STEP, after_policy)
    run(runtime.run_turn())
    results = [e for e in runtime.log.events if e.type == TOOL_RESULT]
    # b finishes first, but results are recorded in the model's order.
    assert [e.data["callId"] for e in results] == ["call-t0-s0-0", "call-t0-s0-1"]
    first_step_end = seq_of(runtime, STEP_END)
    assert durable_after_post_step[0] == first_step_end + 1
    assert all(e.seq < durable_after_post_step[0] for e in results)


def test_rejected_post_step_flush_stops_the_turn_before_another_request(
    make_runtime: RuntimeFactory,
) -> None:
    holder: dict[str, Any] = {}

    def fail_post_step(host: Host) -> None:
        async def arm(_step: Any) -> None:
            holder["runtime"].backend.arm_failure("write", errno.EIO)

        host.on(AGENT_POST_STEP, arm)  # registered first: runs before the checkpoint

    runtime = make_runtime(scenario_from(ONE_TOOL), before_policy=fail_post_step)
    holder["runtime"] = runtime
    with pytest.raises(FlushError):
        run(runtime.run_turn())
    assert runtime.model.calls == 1
    assert runtime.log.events[-1].data["reason"]["kind"] == "error"


def test_a_post_step_failure_ignored_would_let_another_request_through(
    make_runtime: RuntimeFactory,
) -> None:
    # The same fault under turn-only (no post-step checkpoint): the turn goes on.
    holder: dict[str, Any] = {}

    def fail_post_step(host: Host) -> None:
        async def arm(_step: Any) -> None:
            holder["runtime"].backend.arm_failure("write", errno.EIO)

        host.on(AGENT_POST_STEP, arm)

    runtime = make_runtime(
        scenario_from(ONE_TOOL), policy="turn-only", before_policy=fail_post_step
    )
    holder["runtime"] = runtime
    with pytest.raises(FlushError):
        run(runtime.run_turn())
    assert runtime.model.calls == 2


@pytest.mark.parametrize("policy", ["semantic", "turn-only", "every-event"])
def test_turn_end_is_flushed(make_runtime: RuntimeFactory, policy: str) -> None:
    runtime = make_runtime(scenario_from(ONE_TOOL), policy=policy)
    run(runtime.run_turn())
    stored = runtime.backend.load().events
    assert stored[-1].type == TURN_END
    assert len(stored) == len(runtime.log.events)


def test_disposing_the_policy_removes_its_wrappers(make_runtime: RuntimeFactory) -> None:
    runtime = make_runtime(scenario_from(ONE_TOOL))
    counts = [runtime.host.count(h) for h in (LLM_STREAM, TOOLS_EXECUTE, AGENT_POST_STEP)]
    assert counts == [1, 1, 1]
    runtime.policy_disposer()  # type: ignore[misc]
    counts = [runtime.host.count(h) for h in (LLM_STREAM, TOOLS_EXECUTE, AGENT_POST_STEP)]
    assert counts == [0, 0, 0]
    run(runtime.run_turn())
    assert runtime.coordinator.flush_count == 1  # only the loop's turn/end flush is left


def test_fifty_parallel_calls_with_checkpoints_never_duplicate_or_reorder_seqs(
    make_runtime: RuntimeFactory,
) -> None:
    calls = ", ".join(f'{{ tool = "t{i % 5}", arguments = {{ i = {i} }} }}' for i in range(50))
    tools = "\n".join(
        f'[tools.t{k}]\nparallel_safe = true\neffect = "ledger"\nlatency_ms = {(5 - k) * 2}\n'
        'calls = [{ tool = "leaf" }]'
        for k in range(5)
    )
    scenario = scenario_from(
        f"""
max_parallel_tools = 8
{tools}
[tools.leaf]
read_only = true
[[turns]]
user = "go"
  [[turns.steps]]
  tool_calls = [{calls}]
  [[turns.steps]]
  text = "done"
"""
    )
    for policy in ("semantic", "every-event"):
        runtime = make_runtime(scenario, policy=policy)
        assert run(runtime.run_turn()) == "completed"
        stored = runtime.backend.load().events
        assert [e.seq for e in stored] == list(range(len(stored)))
        assert [e.to_json() for e in stored] == [e.to_json() for e in runtime.log.events]
        top_calls = [e for e in stored if e.type == TOOL_CALL and "parentCallId" not in e.data]
        results = [e for e in stored if e.type == TOOL_RESULT and "parentCallId" not in e.data]
        ids = [f"call-t0-s0-{i}" for i in range(50)]
        assert sorted(e.data["callId"] for e in top_calls) == sorted(ids)
        assert [e.data["callId"] for e in results] == ids
        assert len(runtime.tools.ledger.records) == 50


def test_every_event_failure_in_a_parallel_group_fails_closed(
    make_runtime: RuntimeFactory,
) -> None:
    scenario = scenario_from(
        """
        max_parallel_tools = 1
        [tools.w]
        parallel_safe = true
        effect = "ledger"
        [[turns]]
        user = "go"
          [[turns.steps]]
          tool_calls = [{ tool = "w" }, { tool = "w" }, { tool = "w" }]
          [[turns.steps]]
          text = "done"
        """
    )
    holder: dict[str, Any] = {}

    def fail_on_second_call(host: Host) -> None:
        async def arm(event: Any) -> None:
            if event.type == TOOL_CALL and event.data["callId"] == "call-t0-s0-1":
                holder["runtime"].backend.arm_failure("write", errno.EIO)

        host.on(SESSION_APPENDED, arm)  # before the policy's flush-after-append

    runtime = make_runtime(scenario, policy="every-event", before_policy=fail_on_second_call)
    holder["runtime"] = runtime
    with pytest.raises(FlushError):
        run(runtime.run_turn())
    assert runtime.tools.started == ["call-t0-s0-0"]
    events = runtime.log.events
    results = [e.data for e in events if e.type == TOOL_RESULT]
    assert [r["callId"] for r in results] == [f"call-t0-s0-{i}" for i in range(3)]
    assert [r.get("error", {}).get("code") for r in results] == [
        None,
        CHECKPOINT_FAILED,
        CHECKPOINT_FAILED,
    ]
    assert [e.type for e in events][-2:] == [STEP_END, TURN_END]
    assert runtime.model.calls == 1
