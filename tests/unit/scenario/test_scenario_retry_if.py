# `retry_if` (issue 32): a tool that rejects a call whose arguments include
# the given ones, asking the model to call again (pydantic-ai apps raise
# ModelRetry; the reference runtime answers with an error result).  It
# parses, round-trips, refuses an empty table, lets a TOOL_FAILED branch
# wait on it, and the real reference runtime rejects exactly those calls
# before their effect (one charge in the world ledger, not two).
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from faultlab.scenario import ScenarioError, dump_scenario, load_scenario, parse_scenario

RETRIES = Path(__file__).resolve().parents[2] / "fixtures" / "paapps" / "retries.toml"

BASE = """
format = 1
name = "r"
[tools.charge]
effect = "ledger"
{retry}
[[turns]]
user = "pay"
  [[turns.steps]]
  tool_calls = [{{ tool = "charge", arguments = {{ amount = -1 }} }}]
  [[turns.steps]]
  text = "paid"
  {branch}
"""


def test_retry_if_parses_and_matches_by_arguments() -> None:
    spec = load_scenario(str(RETRIES)).tools[0]
    assert spec.retry_if == {"amount": -40}
    assert spec.asks_retry({"amount": -40, "currency": "EUR"})
    assert not spec.asks_retry({"amount": 40, "currency": "EUR"})
    assert not spec.asks_retry({"currency": "EUR"})
    assert "call charge_card again" in spec.retry_message


def test_retry_if_round_trips_through_the_writer() -> None:
    scenario = load_scenario(str(RETRIES))
    again = parse_scenario(dump_scenario(scenario), path=scenario.path)
    assert again.tools == scenario.tools


def test_an_empty_retry_if_is_refused() -> None:
    with pytest.raises(ScenarioError, match=r"retry_if.*at least one argument"):
        parse_scenario(BASE.format(retry="retry_if = {}", branch=""), path="r.toml")


def test_a_tool_failed_branch_may_wait_on_a_rejecting_tool() -> None:
    branch = '[[turns.steps.branches]]\n  when = "TOOL_FAILED"\n  text = "retry"'
    parse_scenario(BASE.format(retry="retry_if = { amount = -1 }", branch=branch), path="r.toml")
    with pytest.raises(ScenarioError, match="TOOL_FAILED can never match"):
        parse_scenario(BASE.format(retry="", branch=branch), path="r.toml")


@pytest.mark.realprocess
def test_the_reference_runtime_rejects_before_the_effect(tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-m", "faultlab.runtime", str(RETRIES), "--session-dir",
                    str(tmp_path), "--ledger", str(tmp_path / "world.jsonl"), "--quiet"],
                   check=True, timeout=60)  # fmt: skip
    ledger = [orjson.loads(line) for line in (tmp_path / "world.jsonl").read_bytes().splitlines()]
    assert [(r["tool"], r["arguments"]["amount"]) for r in ledger] == [("charge_card", 40)]
    log = b"".join(p.read_bytes() for p in tmp_path.glob("*.jsonl") if p.name != "world.jsonl")
    results = [e["data"] for e in map(orjson.loads, log.splitlines())
               if e.get("type") == "tool/result"]  # fmt: skip
    assert [(r["isError"], (r.get("error") or {}).get("code")) for r in results] == [
        (True, "TOOL_FAILED"), (False, None), (True, "TOOL_FAILED")]  # fmt: skip
