"""faultlab.strategies without processes: generated scenarios are valid, round-trip
through TOML, cover every annotation and model shape; options are validated;
the scenario writer refuses what it cannot write faithfully."""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, find, given, settings
from hypothesis.errors import InvalidArgument

from faultlab import strategies as fs
from faultlab.probe import FAULTS
from faultlab.scenario import (
    NestedCall,
    Scenario,
    Step,
    ToolCallSpec,
    Turn,
    dump_scenario,
    load_scenario,
    parse_scenario,
)

SCENARIOS = Path(__file__).resolve().parents[4] / "scenarios"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fs.scenarios(max_turns=3, max_tools=4))
def test_generated_scenarios_round_trip_through_toml(scenario: Scenario) -> None:
    text = dump_scenario(scenario)
    parsed = parse_scenario(text, path="gen.toml")
    assert dataclasses.replace(parsed, path=scenario.path) == scenario
    assert dump_scenario(parsed) == text


@pytest.mark.parametrize("path", sorted(SCENARIOS.glob("*.toml")), ids=lambda p: p.name)
def test_bundled_scenarios_round_trip(path: Path) -> None:
    scenario = load_scenario(path)
    assert parse_scenario(dump_scenario(scenario), path=str(path)) == scenario


NESTED_GROUP = ("outer", "tick", "tock")


def _nested_group(s: Scenario) -> bool:
    return any(tuple(c.tool for c in step.tool_calls) == NESTED_GROUP
               for turn in s.turns for step in turn.steps)  # fmt: skip


SHAPES: dict[str, Callable[[Scenario], bool]] = {
    "read-only tool": lambda s: any(t.read_only for t in s.tools),
    "idempotent ledger tool": lambda s: any(t.idempotent and t.effect == "ledger" for t in s.tools),
    "non-idempotent ledger tool": lambda s: any(
        not t.idempotent and t.effect == "ledger" for t in s.tools
    ),
    "idempotency key": lambda s: any(t.accepts_idempotency_key for t in s.tools),
    "failing tool": lambda s: any(t.fails for t in s.tools),
    "observer": lambda s: any(t.observes for t in s.tools),
    "nested calls": lambda s: any(t.calls for t in s.tools),
    "parallel group": lambda s: any(
        sum(1 for c in step.tool_calls if s.tool(c.tool).parallel_safe) >= 2
        for turn in s.turns for step in turn.steps
    ),
    "careful model": lambda s: any(step.branches for turn in s.turns for step in turn.steps),
    "verification branch": lambda s: any(
        b.when == "TOOL_OUTCOME_UNKNOWN" and any(s.tool(c.tool).observes for c in b.tool_calls)
        for turn in s.turns for step in turn.steps for b in step.branches
    ),
    "several turns": lambda s: len(s.turns) >= 2,
    "nested group": _nested_group,
    "chunked text": lambda s: any(len(step.chunks) >= 3 for t in s.turns for step in t.steps),
    # Issue 30: the tool whose key does not make a retry safe.
    "keyed non-idempotent ledger tool": lambda s: any(
        t.accepts_idempotency_key and not t.idempotent and t.effect == "ledger" for t in s.tools
    ),
}  # fmt: skip


def _annotated(read_only: bool, idempotent: bool, keyed: bool) -> Callable[[Scenario], bool]:
    return lambda s: any(
        (t.read_only, t.idempotent, t.accepts_idempotency_key) == (read_only, idempotent, keyed)
        for t in s.tools
    )


# Every combination of the annotations retry guidance could tell apart.
SHAPES.update({
    f"annotations read_only={r} idempotent={i} key={k}": _annotated(r, i, k)
    for r, i, k in itertools.product((False, True), repeat=3)
})  # fmt: skip


CAREFUL_ONLY = ("careful model", "verification branch")


@pytest.mark.parametrize("careful", [None, True])
def test_every_shape_is_generated(careful: bool | None) -> None:
    seen: set[str] = set()

    @settings(max_examples=150, database=None, derandomize=True, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(fs.scenarios(max_tools=4, careful=careful))
    def collect(scenario: Scenario) -> None:
        seen.update(name for name, shape in SHAPES.items() if shape(scenario))

    collect()
    wanted = set(CAREFUL_ONLY) if careful else set(SHAPES) - set(CAREFUL_ONLY)
    assert wanted <= seen


def test_parallel_groups_are_repeatable() -> None:
    @settings(max_examples=100, database=None, suppress_health_check=list(HealthCheck))
    @given(fs.scenarios(max_tools=5))
    def check(scenario: Scenario) -> None:
        nested = _nested_group(scenario)
        names = {t.name for t in scenario.tools}
        assert nested == ({"inner", *NESTED_GROUP} <= names)
        for tool in scenario.tools:
            if tool.parallel_safe and tool.name not in NESTED_GROUP:
                # With the nested group's pool of 2, no other call may sleep.
                assert tool.latency_ms in ((0,) if nested else (0, 30)) and not tool.calls
        if nested:
            # The one sleeper pair of the scenario: 30 ms tick, 300 ms nested inner.
            assert scenario.max_parallel_tools == 2
            assert [(t.latency_ms, t.parallel_safe, t.calls) for t in scenario.tools
                    if t.name in ("inner", *NESTED_GROUP)] == [
                (300, False, ()), (0, True, (NestedCall("inner", {}),)), (30, True, ()),
                (0, True, ()),
            ]  # fmt: skip
        for step in (step for turn in scenario.turns for step in turn.steps):
            calls = tuple(c.tool for c in step.tool_calls)
            if calls == NESTED_GROUP:
                continue  # tock waits for tick's slot on purpose (checked above)
            # The group's tools run in that step only (a branch retries one alone).
            assert not set(calls) & {"inner", *NESTED_GROUP}
            assert all(len(b.tool_calls) <= 1 for b in step.branches)
            group: list[int] = []  # latencies of a run of parallel-safe calls
            for call in (*step.tool_calls, None):
                tool = scenario.tool(call.tool) if call is not None else None
                if tool is not None and tool.parallel_safe:
                    group.append(tool.latency_ms)
                    continue
                if any(group):  # a sleeper: no call of its group waits for a pool slot
                    assert len(group) <= scenario.max_parallel_tools
                group = []

    check()


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: fs.scenarios(max_turns=0), "max_turns must be between 1 and 10"),
        (lambda: fs.scenarios(max_calls=True), "max_calls must be an integer"),
        (lambda: fs.scenarios(policies=("fast",)), "unknown 'fast'"),
        (lambda: fs.scenarios(policies="semantic"), "non-empty sequence"),
        (lambda: fs.scenarios(careful="yes"), "careful must be True, False or None"),
        (lambda: fs.scenarios(name="a b"), "name must be letters"),
        (lambda: fs.faults(include=("sigkill", "meteor")), "unknown 'meteor'"),
        (lambda: fs.faults(include=()), "non-empty sequence"),
        (lambda: fs.cases(faults=("nope",)), "unknown 'nope'"),
        (lambda: fs.cases(scenarios=42), "scenarios must be a strategy"),  # type: ignore[arg-type]
        (lambda: fs.cases(timeout=0), "timeout must be a number of seconds from 0.1"),
        (lambda: fs.kill_points("x.toml"), "scenario must be a Scenario"),  # type: ignore[arg-type]
    ],
)
def test_options_are_validated(call: Callable[[], object], message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        call()


def test_faults_draws_only_the_included_faults() -> None:
    assert find(fs.faults(), lambda f: True) == FAULTS[0]
    assert find(fs.faults(include=("torn-write", "sigterm")), lambda f: True) == "torn-write"


def _one_step(chunks: tuple[str, ...]) -> Scenario:
    return Scenario("s", "", "<s>", (Turn("hi", (Step(chunks=chunks),)),), ())


def test_the_writer_refuses_chunks_no_option_can_stream() -> None:
    with pytest.raises(ValueError, match="no chunking option streams"):
        dump_scenario(_one_step(("ab", "c", "de")))
    assert parse_scenario(dump_scenario(_one_step(("ab", "cd", "e"))), path="<s>").turns[0].steps[
        0
    ].chunks == ("ab", "cd", "e")


def test_the_writer_refuses_values_json_cannot_carry() -> None:
    step = Step(chunks=("x",), tool_calls=(ToolCallSpec("t", {"n": math.nan}),))
    scenario = Scenario("s", "", "<s>", (Turn("hi", (step, Step(chunks=("y",)))),), ())
    with pytest.raises(ValueError, match="nan cannot be written"):
        dump_scenario(scenario)
