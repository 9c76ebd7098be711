"""Scenario files: each error in a single field (TOML syntax, an unknown key, a wrong type,
a value out of range or not one of its choices, a missing key), with its field path and line;
and the whole message an error prints."""

from __future__ import annotations

import pytest
from scenario_texts import BASE, BRANCH, STEP0, STEP1, TOP, case, error_of, line_of, variant

from faultlab.scenario import ScenarioError, parse_scenario

# --- errors: each with its field path and line ------------------------------

TYPES = variant('text = "Done."', 'text = "Done."\n  delay_ms = "5"')

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
