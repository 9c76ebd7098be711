"""Scenario files: each error in the rules between fields (unknown tools and boundaries,
call cycles, branches that can never match, steps without content, arguments JSON cannot
carry), with its field path and line."""

from __future__ import annotations

import pytest
from scenario_texts import BASE, BRANCH, STEP0, STEP1, TOP, case, error_of, line_of, variant

# --- errors: each with its field path and line ------------------------------

# A first step without tools, so the second step's branch has nothing to see.
NO_TOOLS = variant(STEP0, "") + '\n  [[turns.steps]]\n  text = "More."\n'


ERRORS = [
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
