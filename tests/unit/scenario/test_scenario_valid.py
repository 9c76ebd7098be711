"""Scenario files: valid scenarios parse to the values they state, the docs' example included."""

from __future__ import annotations

import dataclasses
import re
import tomllib
import types
from pathlib import Path

import pytest
from scenario_texts import BRANCH, variant

from faultlab.scenario import (
    Branch,
    Expectation,
    NestedCall,
    Scenario,
    Step,
    ToolCallSpec,
    ToolSpec,
    Turn,
    parse_scenario,
)
from faultlab.scenario import parse as _scenario_parse

DOC = Path(__file__).resolve().parents[3] / "docs" / "scenario-format.md"


def doc_example() -> str:
    match = re.search(r"```toml\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert match is not None
    return match.group(1)


# --- valid scenarios --------------------------------------------------------


def test_doc_example_round_trips() -> None:
    scenario = parse_scenario(doc_example(), path="deploy.toml")
    assert scenario == Scenario(
        name="deploy-careful",
        description="A non-idempotent deploy; the model verifies after an unknown outcome.",
        path="deploy.toml",
        turns=(
            Turn(
                user="Deploy api v2.",
                steps=(
                    Step(
                        chunks=("Deploying ", "now."),
                        tool_calls=(ToolCallSpec("deploy", {"service": "api", "version": 2}),),
                    ),
                    Step(
                        chunks=("Deployed.",),
                        branches=(
                            Branch(
                                when="TOOL_OUTCOME_UNKNOWN",
                                tool="deploy",
                                chunks=(
                                    *("The ", "deploy ", "may ", "or ", "may ", "not "),
                                    *("have ", "happened; ", "checking ", "before ", "retrying."),
                                ),
                                tool_calls=(ToolCallSpec("status"),),
                            ),
                        ),
                    ),
                    Step(chunks=("Verified ", "the ", "deploy ", "state.")),
                ),
            ),
        ),
        tools=(
            ToolSpec("deploy", effect="ledger", result="deployed api v2", latency_ms=5),
            ToolSpec("status", read_only=True, observes="deploy", result="ok"),
        ),
        policy="semantic",
        backend="jsonl",
        max_parallel_tools=4,
        resume_prompt="Continue.",
        boundaries=("request/durable", "tool/durable", "tool/effect#1"),
        expectations=(
            Expectation(
                at="tool/durable#1", repair=("TOOL_OUTCOME_UNKNOWN",), ledger={"deploy": 0}
            ),
        ),
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        scenario.name = "other"  # type: ignore[misc]


def test_defaults_file_order_and_normalised_occurrence() -> None:
    text = """\
name = "d"
[tools.zeta]
calls = [{ tool = "alpha", arguments = { n = [1, 2] } }]
[tools.alpha]
idempotent = true
parallel_safe = true
accepts_idempotency_key = true
fails = true
[[turns]]
user = "u"
steps = [{ tool_calls = [{ tool = "zeta" }] }, { text = "x", repeat = 2 }]
[[expect]]
at = "flush/written"
fault = "power-loss"
"""
    scenario = parse_scenario(text)
    assert scenario.path == "<scenario>"
    assert scenario.tool_names == ("zeta", "alpha")
    assert scenario.tool("zeta").calls == (NestedCall("alpha", {"n": [1, 2]}),)
    alpha = scenario.tool("alpha")
    assert (alpha.idempotent, alpha.parallel_safe, alpha.accepts_idempotency_key) == (
        True,
        True,
        True,
    )
    assert alpha.fails and alpha.result == "ok" and alpha.effect == "none"
    assert (scenario.policy, scenario.backend, scenario.max_parallel_tools) == (
        "semantic",
        "jsonl",
        4,
    )
    assert scenario.resume_prompt == "Continue." and scenario.description == ""
    assert scenario.turns[0].steps[0].chunks == ()
    assert scenario.turns[0].steps[1].chunks == ("xx",)
    # (power-loss cases run only at flush/written: an expectation elsewhere is
    # a load error, tests/integration/test_never_green.py)
    assert scenario.expectations == (Expectation(at="flush/written#1", fault="power-loss"),)


def test_branch_may_wait_for_a_tool_called_only_in_a_branch_of_the_previous_step() -> None:
    text = variant(
        'text = "Verified the deploy state."',
        'text = "Verified the deploy state."\n'
        '    [[turns.steps.branches]]\n    when = "TOOL_OUTCOME_UNKNOWN"\n'
        '    tool = "status"\n    text = "Status unknown."',
        doc_example(),
    )
    branch = parse_scenario(text).turns[0].steps[2].branches[0]
    assert (branch.when, branch.tool, branch.text) == (
        "TOOL_OUTCOME_UNKNOWN",
        "status",
        "Status unknown.",
    )


def test_tool_failed_branch_is_allowed_when_the_tool_fails() -> None:
    text = variant('effect = "ledger"', 'effect = "ledger"\nfails = true') + BRANCH.replace(
        "TOOL_OUTCOME_UNKNOWN", "TOOL_FAILED"
    )
    assert parse_scenario(text).turns[0].steps[1].branches[0].when == "TOOL_FAILED"


def test_arguments_are_copied(monkeypatch: pytest.MonkeyPatch) -> None:
    data = tomllib.loads(
        variant('{ tool = "deploy" }', '{ tool = "deploy", arguments = { a = [1] } }')
    )
    fake = types.SimpleNamespace(loads=lambda _: data, TOMLDecodeError=tomllib.TOMLDecodeError)
    monkeypatch.setattr(_scenario_parse, "tomllib", fake)
    call = parse_scenario("ignored").turns[0].steps[0].tool_calls[0]
    data["turns"][0]["steps"][0]["tool_calls"][0]["arguments"]["a"].append(2)
    assert call.arguments == {"a": [1]}
