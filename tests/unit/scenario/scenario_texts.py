# Shared by the scenario tests: a small valid scenario (`BASE`) and a branch
# to append (`BRANCH`), `variant` to change one part of it, and the helpers
# that parse a text expecting a `ScenarioError` and find the line an error
# must point at.
from __future__ import annotations

from typing import Any

import pytest

from faultlab.scenario import ScenarioError, parse_scenario

__all__ = ["BASE", "BRANCH", "STEP0", "STEP1", "TOP", "case", "error_of", "line_of", "variant"]

# A small valid scenario that the tests vary.
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


# Lines of BASE that the error cases replace.
TOP = 'name = "t"'
STEP0 = 'tool_calls = [{ tool = "deploy" }]'
STEP1 = 'text = "Done."'


def case(case_id: str, text: str, field: str, needle: str | None, fragment: str) -> Any:
    """An error case: the field path, a needle on the line it must point at, a message part."""
    return pytest.param(text, field, needle, fragment, id=case_id)
