"""Scenario files: parsing, chunking, and every class of error with its field and line."""

from __future__ import annotations

import dataclasses
import re
import tomllib
import types
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from faultlab.scenario import (
    Branch,
    Expectation,
    NestedCall,
    Scenario,
    ScenarioError,
    Step,
    ToolCallSpec,
    ToolSpec,
    Turn,
    load_scenario,
    parse_scenario,
)
from faultlab.scenario import parse as _scenario_parse
from faultlab.scenario.parse import chunk_text, locate

DOC = Path(__file__).resolve().parents[3] / "docs" / "scenario-format.md"

# A small valid scenario that the error cases below vary.
BASE = """\
name = "t"

[tools.deploy]
effect = "ledger"

[tools.status]
read_only = true

[[turns]]
user = "go"

  [[turns.steps]]
  text = "Deploying."
  tool_calls = [{ tool = "deploy" }]

  [[turns.steps]]
  text = "Done."
"""

BRANCH = """\
    [[turns.steps.branches]]
    when = "TOOL_OUTCOME_UNKNOWN"
    text = "Checking."
"""


def variant(old: str, new: str, base: str = BASE) -> str:
    assert base.count(old) == 1, old
    return base.replace(old, new)


def line_of(text: str, needle: str, nth: int | None = None) -> int:
    """Line number of the one line containing `needle` (or of its `nth` such line)."""
    hits = [n for n, line in enumerate(text.splitlines(), 1) if needle in line]
    assert len(hits) == 1 if nth is None else len(hits) > nth, (needle, hits)
    return hits[0 if nth is None else nth]


def error_of(text: str) -> ScenarioError:
    with pytest.raises(ScenarioError) as info:
        parse_scenario(text, path="s.toml")
    return info.value


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
at = "turn/durable"
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
    assert scenario.expectations == (Expectation(at="turn/durable#1", fault="power-loss"),)


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


# --- chunking ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "options", "expected"),
    [
        ("a b  c", {}, ("a ", "b  ", "c")),
        ("  a b\n", {}, ("  a ", "b\n")),
        ("   ", {}, ("   ",)),
        ("", {}, ()),
        ("", {"chunks": 3}, ()),
        ("", {"chunk_size": 3}, ()),
        ("abcdefg", {"chunks": 3}, ("abc", "de", "fg")),
        ("abc", {"chunks": 10}, ("a", "b", "c")),
        ("abcdefg", {"chunk_size": 3}, ("abc", "def", "g")),
    ],
)
def test_chunking(text: str, options: dict[str, int], expected: tuple[str, ...]) -> None:
    assert chunk_text(text, **options) == expected


def test_step_chunks_repeat_the_text_then_split() -> None:
    text = variant('text = "Done."', 'text = "ab"\n  repeat = 3\n  chunks = 4')
    assert parse_scenario(text).turns[0].steps[1].chunks == ("ab", "ab", "a", "b")
    text = variant('text = "Done."', 'text = "ab "\n  repeat = 2\n  chunk_size = 4')
    assert parse_scenario(text).turns[0].steps[1].chunks == ("ab a", "b ")


@given(
    text=st.text(alphabet=st.sampled_from("ab \n\t\u00e9")),
    count=st.integers(1, 20),
    mode=st.sampled_from(["words", "chunks", "chunk_size"]),
)
def test_chunks_join_to_the_text(text: str, count: int, mode: str) -> None:
    options = {} if mode == "words" else {mode: count}
    chunks = chunk_text(text, **options)
    assert "".join(chunks) == text
    assert all(chunks)
    if mode == "chunks":
        assert len(chunks) == min(count, len(text))
        assert max(map(len, chunks), default=0) - min(map(len, chunks), default=0) <= 1
    if mode == "chunk_size":
        assert all(len(chunk) == count for chunk in chunks[:-1])


# --- errors: each with its field path and line ------------------------------

TYPES = variant('text = "Done."', 'text = "Done."\n  delay_ms = "5"')
TOP = 'name = "t"'
STEP0 = 'tool_calls = [{ tool = "deploy" }]'
STEP1 = 'text = "Done."'
# A first step without tools, so the second step's branch has nothing to see.
NO_TOOLS = variant(STEP0, "") + '\n  [[turns.steps]]\n  text = "More."\n'


def case(case_id: str, text: str, field: str, needle: str | None, fragment: str) -> Any:
    """An error case: the field path, a needle on the line it must point at, a message part."""
    return pytest.param(text, field, needle, fragment, id=case_id)


ERRORS = [
    case(
        "toml-syntax",
        variant(TOP, 'name = "t"\nbad = \n'),
        "",
        "bad =",
        "invalid TOML: Invalid value (column 7)",
    ),
    case(
        "toml-end",
        'name = "t"\ntext = "abc',
        "",
        'text = "abc',
        "(at end of document)",
    ),
    case(
        "unknown-top-key",
        variant(TOP, 'name = "t"\ncolour = 1'),
        "colour",
        "colour",
        "allowed: format, name",
    ),
    case(
        "unknown-tool-key",
        variant('effect = "ledger"', 'effect = "ledger"\nretries = 2'),
        "tools.deploy.retries",
        "retries",
        "allowed: read_only,",
    ),
    case(
        "unknown-step-key",
        variant(STEP1, 'text = "Done."\n  delay = 5'),
        "turns[0].steps[1].delay",
        "delay",
        "allowed: text, repeat",
    ),
    case(
        "unknown-call-key",
        variant('{ tool = "deploy" }', '{ tool = "deploy", args = {} }'),
        "turns[0].steps[0].tool_calls[0].args",
        "args",
        "allowed: tool, arguments",
    ),
    case(
        "unknown-branch-key",
        BASE + BRANCH + "    delay_ms = 3\n",
        "turns[0].steps[1].branches[0].delay_ms",
        "delay_ms",
        "allowed: when, tool, text",
    ),
    case(
        "bool-is-not-int",
        variant('effect = "ledger"', "latency_ms = true"),
        "tools.deploy.latency_ms",
        "latency_ms",
        "expected integer, got boolean true",
    ),
    case(
        "string-not-int",
        TYPES,
        "turns[0].steps[1].delay_ms",
        "delay_ms",
        "expected integer, got string '5'",
    ),
    case(
        "wrong-type-name",
        variant(TOP, "name = 5"),
        "name",
        "name = 5",
        "expected string, got integer 5",
    ),
    case(
        "wrong-type-bool",
        variant("read_only = true", 'read_only = "yes"'),
        "tools.status.read_only",
        "read_only",
        "expected boolean, got string 'yes'",
    ),
    case(
        "wrong-type-turns",
        'name = "t"\nturns = 3\n',
        "turns",
        "turns = 3",
        "expected array, got integer 3",
    ),
    case(
        "wrong-type-tool",
        variant("[tools.status]\nread_only = true", "[tools]\nstatus = 3"),
        "tools.status",
        "status = 3",
        "expected table, got integer 3",
    ),
    case(
        "wrong-type-arguments",
        variant('{ tool = "deploy" }', '{ tool = "deploy", arguments = "x" }'),
        "turns[0].steps[0].tool_calls[0].arguments",
        STEP0[:10],
        "expected table, got string 'x'",
    ),
    case(
        "wrong-type-boundary",
        variant(TOP, 'name = "t"\nboundaries = [1]'),
        "boundaries[0]",
        "boundaries",
        "expected string, got integer 1",
    ),
    case(
        "range-max",
        variant(TOP, 'name = "t"\nmax_parallel_tools = 65'),
        "max_parallel_tools",
        "max_parallel",
        "between 1 and 64, got 65",
    ),
    case(
        "range-repeat",
        variant(STEP1, 'text = "Done."\n  repeat = 0'),
        "turns[0].steps[1].repeat",
        "repeat",
        "between 1 and 100000, got 0",
    ),
    case(
        "range-chunks",
        variant(STEP1, 'text = "Done."\n  chunks = 0'),
        "turns[0].steps[1].chunks",
        "chunks = 0",
        "must be >= 1, got 0",
    ),
    case(
        "range-latency",
        variant('effect = "ledger"', "latency_ms = 60001"),
        "tools.deploy.latency_ms",
        "latency_ms",
        "between 0 and 60000",
    ),
    case(
        "missing-name",
        variant(TOP, ""),
        "name",
        None,
        "required key is missing",
    ),
    case(
        "missing-user",
        variant('user = "go"', ""),
        "turns[0].user",
        "[[turns]]",
        "required key is missing",
    ),
    case(
        "missing-call-tool",
        variant('{ tool = "deploy" }', "{ arguments = {} }"),
        "turns[0].steps[0].tool_calls[0].tool",
        "tool_calls",
        "required key is missing",
    ),
    case(
        "missing-when",
        BASE + BRANCH.replace('    when = "TOOL_OUTCOME_UNKNOWN"\n', ""),
        "turns[0].steps[1].branches[0].when",
        "branches",
        "required key is missing",
    ),
    case(
        "missing-turns",
        'name = "t"\n',
        "turns",
        None,
        "required key is missing",
    ),
    case(
        "empty-turns",
        'name = "t"\nturns = []\n',
        "turns",
        "turns = []",
        "at least one turn",
    ),
    case(
        "empty-steps",
        'name = "t"\n[[turns]]\nuser = "u"\nsteps = []\n',
        "turns[0].steps",
        "steps = []",
        "at least one step",
    ),
    case(
        "format",
        variant(TOP, 'format = 2\nname = "t"'),
        "format",
        "format",
        "unsupported format 2 (supported: 1)",
    ),
    case(
        "format-bool",
        variant(TOP, 'format = true\nname = "t"'),
        "format",
        "format",
        "expected integer, got boolean true",
    ),
    case(
        "scenario-name",
        variant(TOP, 'name = "my scenario"'),
        "name",
        "name =",
        "letters, digits, '-', '_', '.'; got 'my scenario'",
    ),
    case(
        "empty-name",
        variant(TOP, 'name = ""'),
        "name",
        "name =",
        "got ''",
    ),
    case(
        "tool-name",
        variant("[tools.status]", '[tools."st atus"]'),
        'tools."st atus"',
        "st atus",
        "tool name must be",
    ),
    case(
        "policy",
        variant(TOP, 'name = "t"\npolicy = "lazy"'),
        "policy",
        "policy",
        "unknown policy 'lazy' (valid: semantic, turn-only, every-event)",
    ),
    case(
        "backend",
        variant(TOP, 'name = "t"\nbackend = "postgres"'),
        "backend",
        "backend",
        "unknown backend 'postgres' (valid: jsonl, sqlite)",
    ),
    case(
        "effect",
        variant('effect = "ledger"', 'effect = "disk"'),
        "tools.deploy.effect",
        "effect",
        "unknown effect 'disk' (valid: none, ledger)",
    ),
    case(
        "fault",
        BASE + '[[expect]]\nat = "tool/durable"\nfault = "meteor"\n',
        "expect[0].fault",
        "fault",
        "unknown fault 'meteor' (valid: sigkill, power-loss",
    ),
    case(
        "branch-code",
        BASE + BRANCH.replace("TOOL_OUTCOME_UNKNOWN", "OOPS"),
        "turns[0].steps[1].branches[0].when",
        "OOPS",
        "unknown error code 'OOPS' (valid: TOOL_OUTCOME_UNKNOWN,",
    ),
    case(
        "repair-code",
        BASE + '[[expect]]\nat = "tool/durable"\nrepair = ["TOOL_FAILED"]\n',
        "expect[0].repair[0]",
        "repair",
        "unknown repair code 'TOOL_FAILED' (valid: TOOL_NOT_STARTED, TOOL_OUTCOME_UNKNOWN)",
    ),
    case(
        "undefined-call",
        variant('{ tool = "deploy" }', '{ tool = "deplyo" }'),
        "turns[0].steps[0].tool_calls[0].tool",
        "deplyo",
        "unknown tool 'deplyo' (tools: deploy, status)",
    ),
    case(
        "undefined-nested",
        variant('effect = "ledger"', 'calls = [{ tool = "nope" }]'),
        "tools.deploy.calls[0].tool",
        "nope",
        "unknown tool 'nope' (tools: deploy, status)",
    ),
    case(
        "undefined-observes",
        variant("read_only = true", 'observes = "nope"'),
        "tools.status.observes",
        "observes",
        "unknown tool 'nope'",
    ),
    case(
        "undefined-branch-tool",
        BASE + BRANCH + '    tool = "nope"\n',
        "turns[0].steps[1].branches[0].tool",
        "nope",
        "unknown tool 'nope'",
    ),
    case(
        "undefined-ledger",
        BASE + '[[expect]]\nat = "tool/durable"\nledger = { nope = 1 }\n',
        "expect[0].ledger.nope",
        "nope = 1",
        "unknown tool 'nope'",
    ),
    case(
        "no-tools-defined",
        'name = "t"\n[[turns]]\nuser = "u"\n[[turns.steps]]\ntool_calls = [{ tool = "x" }]\n',
        "turns[0].steps[0].tool_calls[0].tool",
        "tool_calls",
        "(tools: none)",
    ),
    case(
        "ledger-count",
        BASE + '[[expect]]\nat = "tool/durable"\nledger = { deploy = -1 }\n',
        "expect[0].ledger.deploy",
        "deploy = -1",
        "must be >= 0, got -1",
    ),
    case(
        "cycle",
        variant(
            "read_only = true",
            'calls = [{tool = "deploy"}]',
            variant('effect = "ledger"', 'calls = [{ tool = "status" }]'),
        ),
        "tools.status.calls[0].tool",
        '{tool = "deploy"}',
        "nested calls form a cycle: deploy -> status -> deploy",
    ),
    case(
        "self-cycle",
        variant('effect = "ledger"', 'calls = [{ tool = "status" }, {tool = "deploy"}]'),
        "tools.deploy.calls[1].tool",
        '{tool = "deploy"}',
        "cycle: deploy -> deploy",
    ),
    case(
        "read-only-ledger",
        variant("read_only = true", 'read_only = true\neffect="ledger"'),
        "tools.status.effect",
        'effect="ledger"',
        'read_only tool cannot have effect = "ledger"',
    ),
    case(
        "branch-first-step",
        variant(STEP0, STEP0 + "\n" + BRANCH),
        "turns[0].steps[0].branches[0]",
        "branches",
        "on the first step of its turn",
    ),
    case(
        "branch-no-tool-before",
        NO_TOOLS.replace('text = "Done."', 'text = "Done."\n' + BRANCH),
        "turns[0].steps[1].branches[0]",
        "branches",
        "the previous step calls no tool",
    ),
    case(
        "branch-tool-not-called",
        BASE + BRANCH + '    tool = "status"\n',
        "turns[0].steps[1].branches[0].tool",
        'tool = "status"',
        "never calls 'status' (it calls: deploy)",
    ),
    case(
        "branch-tool-failed",
        BASE + BRANCH.replace("TOOL_OUTCOME_UNKNOWN", "TOOL_FAILED"),
        "turns[0].steps[1].branches[0].when",
        "TOOL_FAILED",
        "no tool of deploy has fails = true",
    ),
    case(
        "last-step-calls",
        variant(STEP1, 'text = "Done."\n  tool_calls = [{tool = "status"}]'),
        "turns[0].steps[1].tool_calls",
        '{tool = "status"}',
        "last step of a turn cannot call tools",
    ),
    case(
        "last-branch-calls",
        BASE + BRANCH + '    tool_calls = [{tool = "status"}]\n',
        "turns[0].steps[1].branches[0].tool_calls",
        '{tool = "status"}',
        "branch of the last step",
    ),
    case(
        "empty-step",
        variant('[[turns.steps]]\n  text = "Done."', "[[turns.steps]]  # empty\n  delay_ms = 5"),
        "turns[0].steps[1]",
        "# empty",
        "a step must have text or tool_calls",
    ),
    case(
        "empty-branch",
        BASE + '    [[turns.steps.branches]]\n    when = "TOOL_NOT_STARTED"\n',
        "turns[0].steps[1].branches[0]",
        "branches",
        "a branch must have text or tool_calls",
    ),
    case(
        "chunks-and-size",
        variant(STEP1, 'text = "Done."\n  chunks = 2\n  chunk_size = 2'),
        "turns[0].steps[1].chunk_size",
        "chunk_size",
        "cannot both be given",
    ),
    case(
        "boundary-name",
        variant(TOP, 'name = "t"\nboundaries = ["tool/durable", "tool/durabel"]'),
        "boundaries[1]",
        "boundaries",
        "unknown boundary 'tool/durabel' (known: turn/started,",
    ),
    case(
        "boundary-count",
        variant(TOP, 'name = "t"\nboundaries = ["tool/durable#0"]'),
        "boundaries[0]",
        "boundaries",
        "must be a whole number >= 1",
    ),
    case(
        "expect-at-name",
        BASE + '[[expect]]\nat = "nope#1"\n',
        "expect[0].at",
        "nope#1",
        "unknown boundary 'nope'",
    ),
    case(
        "expect-at-count",
        BASE + '[[expect]]\nat = "tool/effect#x"\n',
        "expect[0].at",
        "#x",
        "must be a whole number >= 1",
    ),
    case(
        "expect-at-missing",
        BASE + '[[expect]]\nat = "tool/effect"\n[[expect]]  # second\nfault = "sigkill"\n',
        "expect[1].at",
        "# second",
        "required key is missing",
    ),
    case(
        "arguments-date",
        variant('{ tool = "deploy" }', '{ tool = "deploy", arguments = { on = 2024-01-01 } }'),
        "turns[0].steps[0].tool_calls[0].arguments.on",
        "2024",
        "a date cannot be sent as JSON",
    ),
    case(
        "arguments-nan",
        variant('{ tool = "deploy" }', '{ tool = "deploy", arguments = { x = [nan] } }'),
        "turns[0].steps[0].tool_calls[0].arguments.x[0]",
        "nan",
        "nan cannot be sent as JSON",
    ),
]


@pytest.mark.parametrize(("text", "field", "needle", "fragment"), ERRORS)
def test_error(text: str, field: str, needle: str | None, fragment: str) -> None:
    error = error_of(text)
    assert error.path == "s.toml"
    assert error.field_path == field
    assert fragment in error.problem
    assert error.line == (None if needle is None else line_of(text, needle))
    assert str(error).startswith(f"s.toml:{error.line}: " if error.line else "s.toml: ")


def test_error_message_names_file_line_and_field() -> None:
    text = variant('{ tool = "deploy" }', '{ tool = "deplyo" }')
    with pytest.raises(ScenarioError) as info:
        parse_scenario(text, path="scenarios/deploy.toml")
    assert str(info.value) == (
        "scenarios/deploy.toml:14: turns[0].steps[0].tool_calls[0].tool: "
        "unknown tool 'deplyo' (tools: deploy, status)"
    )


# --- the line locator -------------------------------------------------------


def test_locator_counts_array_headers_per_parent() -> None:
    text = BASE + '[[turns]]\nuser = "again"\n  [[turns.steps]]\n  text = "a"\n'
    text += "  [[turns.steps]]\n  text = 5\n"
    error = error_of(text)
    assert (error.field_path, error.line) == ("turns[1].steps[1].text", line_of(text, "text = 5"))
    assert locate(text, ("turns", 1)) == line_of(text, "[[turns]]", 1)
    assert locate(text, ("turns", 0, "steps", 1)) == line_of(text, "[[turns.steps]]", 1)
    assert locate(text, ("turns", 1, "steps", 0, "text")) == line_of(text, 'text = "a"')


def test_locator_dotted_keys_and_tables_defined_by_them() -> None:
    text = variant("[tools.status]\nread_only = true", '[tools]\nstatus.read_only = "no"')
    error = error_of(text)
    assert (error.field_path, error.line) == ("tools.status.read_only", line_of(text, "status."))
    assert locate(text, ("tools", "status")) == line_of(text, "status.")


def test_locator_skips_multiline_values() -> None:
    text = variant(
        'text = "Deploying."\n  tool_calls = [{ tool = "deploy" }]',
        'text = """\nlatency_ms = 1\n[[turns]]\n"""\n'
        "  tool_calls = [\n"
        '    { tool = "deploy", arguments = { m = [\n      [1, 2],\n    ] } },\n'
        '    { tool = "nope" },\n  ]\n  repeat = "2"',
    )
    error = error_of(text)  # the multi-line string and array do not derail the scan
    assert (error.field_path, error.line) == ("turns[0].steps[0].repeat", line_of(text, "repeat"))
    # A field inside a multi-line array is found at the line of its key.
    assert locate(text, ("turns", 0, "steps", 0, "tool_calls", 1, "tool")) == line_of(
        text, "tool_calls = ["
    )


def test_locator_gives_no_line_rather_than_a_wrong_one() -> None:
    text = variant("[tools.deploy]", '[tools."de\\u0070loy"]')  # an escaped key it cannot read
    error = error_of(variant('effect = "ledger"', "latency_ms = -1", text))
    assert (error.field_path, error.line) == ("tools.deploy.latency_ms", None)
    assert locate(BASE, ("nope",)) is None
    assert locate(BASE, ()) is None


# --- loading files ----------------------------------------------------------


def test_load_scenario_reads_a_file(tmp_path: Path) -> None:
    path = tmp_path / "ok.toml"
    path.write_text(BASE, encoding="utf-8")
    assert load_scenario(path).path == str(path)


@pytest.mark.parametrize(
    ("make", "fragment"),
    [
        (lambda p: None, "no such file"),
        (lambda p: p.mkdir(), "is a directory, not a scenario file"),
        (lambda p: p.write_bytes(b'name = "\xff"\n'), "not UTF-8 (byte offset 8)"),
    ],
    ids=["missing", "directory", "not-utf8"],
)
def test_load_scenario_errors_name_the_file(tmp_path: Path, make: Any, fragment: str) -> None:
    path = tmp_path / "s.toml"
    make(path)
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert info.value.path == str(path)
    assert str(info.value) == f"{path}: {fragment}"
