# The shapes of generated scenarios (behind `faultlab.strategies`).
#
# Owns what a random scenario may look like so that a correct runtime
# recovers it with every guarantee held, and so that two runs of it reach the
# same boundaries in the same order:
# - parallel-safe tools sleep 0 or 30 ms (well separated, so the finishing
#   order of a parallel group does not depend on the machine's load) and make
#   no nested calls; other tools sleep 0-2 ms; the pool is large enough that
#   no call of a group with a sleeper waits for a slot;
# - one exception, the *nested group* (`_NESTED`, at most one per scenario):
#   a parallel group [outer, tick, tock] with a pool of exactly 2, where
#   `outer` (0 ms) calls `inner` (not parallel-safe) and `tick` returns once
#   inner's body has started (inner's call is durable then); `tock` waits for
#   tick's slot, so its checkpoint flushes the nested tool/call while inner
#   still runs: the nested call is durable and unanswered at a kill point
#   under `semantic`.  Inner returns once tock's body has returned.  Both
#   waits are events (`returns_after_start`, `returns_after`), bounded by
#   timers of 30 and 300 ms that a runtime ignoring the two fields waits out
#   instead (far apart, so the order holds on a loaded machine there too);
#   in such a scenario the random parallel-safe tools sleep 0 ms (the pool of
#   2 must not queue a sleeper) and random steps never call the group's tools;
# - nested calls only go to tools defined earlier (no cycles);
# - each tool's `read_only`, `idempotent` and `accepts_idempotency_key` are
#   drawn apart, so every combination retry guidance could tell apart comes
#   up, a non-idempotent tool that takes an idempotency key included (the key
#   is the call id: it does not make the model's retry, a new call, safe);
# - observer tools (read-only, `observes`) verify a non-idempotent tool;
# - a careful model branches after repair: it verifies an unknown outcome of a
#   non-idempotent call with its observer, retries a call that never started
#   (same arguments) or an unknown outcome of a safe-to-retry one, and answers
#   a failed tool in text.  It never retries what may have happened, which
#   would duplicate an effect through the model's fault, not the runtime's.
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, cast

from hypothesis import strategies as st

from faultlab.lab.campaigns.dryrun import DryRuns, GeneratedCase, applicable_cases
from faultlab.lab.faults.table import CLASSIC_FAULTS
from faultlab.scenario import (
    Branch,
    Effect,
    NestedCall,
    Policy,
    Scenario,
    Step,
    ToolCallSpec,
    ToolSpec,
    Turn,
)
from faultlab.scenario.chunking import chunk_text

__all__ = ["Limits", "batches_on", "cases_on", "scenario_shapes"]

_WORDS = (
    "ok", "done", "checking", "the", "order", "was", "charged", "now", "naïve", "café",
    'say "hi"', "back\\slash", "tab\there", "new\nline", "😀",
)  # fmt: skip
_ARG_KEYS = ("id", "amount", "to", "mode")
_PARALLEL_LATENCIES = (0, 30)
# The nested group's tools (see the top comment); names no random tool takes.
_NESTED = ("outer", "tick", "tock")
_INNER = "inner"
_INNER_LATENCY_MS = 300


@dataclass(frozen=True, slots=True)
class Limits:
    max_turns: int
    max_steps: int
    max_tools: int
    max_calls: int
    policies: tuple[str, ...]
    careful: bool | None
    name: str


_texts = st.lists(st.sampled_from(_WORDS), min_size=1, max_size=5).map(" ".join)
_arguments = st.dictionaries(
    st.sampled_from(_ARG_KEYS),
    st.one_of(
        st.integers(-100, 1000),
        st.sampled_from(_WORDS),
        st.booleans(),
        st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False),
    ),
    max_size=2,
)


@st.composite
def _chunks(draw: st.DrawFn) -> tuple[str, ...]:
    text = draw(_texts)
    mode = draw(st.sampled_from(("words", "size", "count")))
    if mode == "size":
        return chunk_text(text, chunk_size=draw(st.integers(1, 8)))
    if mode == "count":
        return chunk_text(text, chunks=draw(st.integers(1, 4)))
    return chunk_text(text)


def _kind(spec: ToolSpec) -> str:
    if spec.read_only:
        return "read"
    if spec.effect == "ledger":
        return "put" if spec.idempotent else "write"
    return "ping"


@st.composite
def _tools(draw: st.DrawFn, limits: Limits, nested_group: bool) -> tuple[ToolSpec, ...]:
    tools: list[ToolSpec] = []
    parallel_latencies = (0,) if nested_group else _PARALLEL_LATENCIES
    for index in range(draw(st.integers(0, limits.max_tools))):
        read_only = draw(st.booleans())
        parallel_safe = draw(st.booleans())
        effect: Effect = "none" if read_only else draw(st.sampled_from(("ledger", "none")))
        latency = draw(st.sampled_from(parallel_latencies) if parallel_safe else st.integers(0, 2))
        calls: list[ToolCallSpec] = []
        if tools and not parallel_safe:
            calls = draw(st.lists(
                st.builds(ToolCallSpec, st.sampled_from([t.name for t in tools]), _arguments),
                max_size=2,
            ))  # fmt: skip
        spec = ToolSpec(
            name="", read_only=read_only, idempotent=draw(st.booleans()),
            parallel_safe=parallel_safe, accepts_idempotency_key=draw(st.booleans()),
            effect=effect, latency_ms=latency, result=draw(_texts), fails=draw(st.booleans()),
        )  # fmt: skip
        nested = tuple(NestedCall(c.tool, c.arguments) for c in calls)
        tools.append(_named(spec, f"{_kind(spec)}{index}", calls=nested))
    for spec in list(tools):
        if spec.effect == "ledger" and not spec.idempotent:
            observer = ToolSpec(
                name=f"verify_{spec.name}", read_only=True, result="checked",
                observes=spec.name,
            )  # fmt: skip
            tools.append(observer)
    if nested_group:
        tools += _nested_group_tools(draw(_texts))
    return tuple(tools)


def _nested_group_tools(result: str) -> list[ToolSpec]:
    """The nested group's tools, all read-only: a careful model may retry them
    after repair without duplicating an effect."""
    inner = ToolSpec(name=_INNER, read_only=True, latency_ms=_INNER_LATENCY_MS, result=result,
                     returns_after=_NESTED[2])  # fmt: skip
    outer, tick, tock = (
        ToolSpec(name=name, read_only=True, parallel_safe=True, latency_ms=latency, result="ok",
                 calls=(NestedCall(_INNER, {}),) if name == "outer" else (),
                 returns_after_start=_INNER if name == "tick" else None)
        for name, latency in zip(_NESTED, (0, 30, 0), strict=True)
    )  # fmt: skip
    return [inner, outer, tick, tock]


def _nested_group_step() -> Step:
    return Step(chunks=chunk_text("Looking it up."),
                tool_calls=tuple(ToolCallSpec(name) for name in _NESTED))  # fmt: skip


def _named(spec: ToolSpec, name: str, **changes: Any) -> ToolSpec:
    return replace(spec, name=name, **changes)


@st.composite
def _tool_step(draw: st.DrawFn, tools: Sequence[ToolSpec], limits: Limits) -> Step:
    callable_tools = [
        t.name for t in tools if t.observes is None and t.name not in (_INNER, *_NESTED)
    ]
    calls = draw(st.lists(
        st.builds(ToolCallSpec, st.sampled_from(callable_tools), _arguments),
        min_size=1, max_size=limits.max_calls,
    ))  # fmt: skip
    chunks = draw(_chunks()) if draw(st.booleans()) else ()
    return Step(chunks=chunks, tool_calls=tuple(calls), delay_ms=draw(st.integers(0, 1)))


def _candidate_branches(previous: Step, tools: dict[str, ToolSpec]) -> list[Branch]:
    """Branches a careful model may take after `previous` (see the top comment)."""
    found: list[Branch] = []
    seen: set[str] = set()
    for call in previous.tool_calls:
        if call.tool in seen:
            continue
        seen.add(call.tool)
        spec = tools[call.tool]
        observers = [t for t in tools.values() if t.observes == call.tool]
        if observers:
            verify = ToolCallSpec(observers[0].name)
            found.append(Branch("TOOL_OUTCOME_UNKNOWN", call.tool,
                                chunk_text("Verifying first."), (verify,)))  # fmt: skip
        elif spec.safe_to_retry:
            found.append(Branch("TOOL_OUTCOME_UNKNOWN", call.tool,
                                chunk_text("Retrying, it is safe."), (call,)))  # fmt: skip
        found.append(Branch("TOOL_NOT_STARTED", call.tool, chunk_text("Trying again."), (call,)))
        if spec.fails:
            found.append(Branch("TOOL_FAILED", call.tool, chunk_text("The tool failed."), ()))
    return found


def _verifies(branch: Branch, tools: dict[str, ToolSpec]) -> bool:
    return any(tools[call.tool].observes is not None for call in branch.tool_calls)


@st.composite
def _turn(
    draw: st.DrawFn, tools: tuple[ToolSpec, ...], careful: bool, limits: Limits, nested: bool
) -> Turn:
    """A turn; with `nested`, the nested group's step comes at a drawn place
    among its tool steps (it takes one of the turn's `max_steps`)."""
    user = draw(_texts)
    steps: list[Step] = []
    random_tools = any(t.observes is None and t.name not in (_INNER, *_NESTED) for t in tools)
    if random_tools:
        count = draw(st.integers(0, limits.max_steps - 1 - nested))
        steps = [draw(_tool_step(tools, limits)) for _ in range(count)]
    if nested:
        steps.insert(draw(st.integers(0, len(steps))), _nested_group_step())
    steps.append(Step(chunks=draw(_chunks())))
    if careful:
        by_name = {t.name: t for t in tools}
        for index in range(1, len(steps)):
            candidates = _candidate_branches(steps[index - 1], by_name)
            # A careful model always verifies; the other branches are drawn.
            chosen = tuple(b for b in candidates if _verifies(b, by_name) or draw(st.booleans()))
            if chosen:
                steps[index] = Step(steps[index].chunks, steps[index].tool_calls,
                                    steps[index].delay_ms, branches=chosen)  # fmt: skip
        last = steps[-1]
        if any(b.tool_calls for b in last.branches):
            steps.append(Step(chunks=chunk_text("Checked.")))
    return Turn(user=user, steps=tuple(steps))


@st.composite
def _scenario(draw: st.DrawFn, limits: Limits) -> Scenario:
    # The nested group needs three calls in one step and a tool step besides
    # the turn's closing text; drawn in about half of the scenarios.
    allowed = limits.max_calls >= len(_NESTED) and limits.max_steps >= 2
    nested_group = allowed and draw(st.booleans())
    tools = draw(_tools(limits, nested_group))
    careful = draw(st.booleans()) if limits.careful is None else limits.careful
    count = draw(st.integers(1, limits.max_turns))
    nested_turn = draw(st.integers(0, count - 1)) if nested_group else -1
    turns = tuple(draw(_turn(tools, careful, limits, i == nested_turn)) for i in range(count))
    # A pool of exactly 2 makes tock wait for tick's slot; no other group has
    # a sleeper then, so no other call's order depends on the pool.
    pool = 2 if nested_group else max(draw(st.integers(1, 4)), _unqueued(turns, tools))
    return Scenario(
        name=limits.name,
        description=("careful" if careful else "careless") + " model, generated by faultlab",
        path="<generated>",
        turns=turns,
        tools=tools,
        policy=cast(Policy, draw(st.sampled_from(limits.policies))),
        max_parallel_tools=pool,
    )


def _unqueued(turns: Sequence[Turn], tools: Sequence[ToolSpec]) -> int:
    """The pool size that starts every call of a parallel group with a sleeping
    tool at once: a call queued behind a sleeping one would make its own
    checkpoint flush race the sleeper's timer (the order of their boundaries
    would depend on how long fsync takes)."""
    by_name = {t.name: t for t in tools}
    needed = 1
    for step in (step for turn in turns for step in turn.steps):
        contents: list[Step | Branch] = [step, *step.branches]
        for content in contents:
            group: list[ToolSpec] = []
            for call in (*content.tool_calls, None):
                spec = by_name[call.tool] if call is not None else None
                if spec is not None and spec.parallel_safe:
                    group.append(spec)
                    continue
                if any(t.latency_ms for t in group):
                    needed = max(needed, len(group))
                group = []
    return needed


def scenario_shapes(limits: Limits) -> st.SearchStrategy[Scenario]:
    return _scenario(limits)


def cases_on(
    runs: DryRuns, scenarios: st.SearchStrategy[Scenario], faults: Sequence[str]
) -> st.SearchStrategy[GeneratedCase]:
    """A scenario, its dry run on `runs`' target, one applicable case."""
    return batches_on(runs, scenarios, faults, 1).map(lambda batch: batch[0])


def batches_on(
    runs: DryRuns, scenarios: st.SearchStrategy[Scenario], faults: Sequence[str], size: int
) -> st.SearchStrategy[tuple[GeneratedCase, ...]]:
    """A scenario, its dry run on `runs`' target, and `size` distinct
    applicable cases on it (all there are, if fewer): one dry run serves them."""

    @st.composite
    def generated(draw: st.DrawFn) -> tuple[GeneratedCase, ...]:
        scenario = draw(scenarios)
        reference = runs.reference(scenario)
        applicable = applicable_cases(reference, faults)
        count = min(size, len(applicable))
        chosen = draw(st.lists(st.sampled_from(applicable), min_size=count, max_size=count,
                               unique=True))  # fmt: skip
        batch = []
        for case in chosen:
            judged_on = reference
            if case.fault in CLASSIC_FAULTS and CLASSIC_FAULTS[case.fault].needs_trace:
                # judged on the fault-free run's system calls: that run traced
                # (the draws above are the same either way: a JSONL target's
                # cases do not depend on the trace)
                judged_on = runs.reference(scenario, traced=True)
            batch.append(GeneratedCase(scenario, case, judged_on))
        return tuple(batch)

    return generated()
