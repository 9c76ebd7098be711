# Gemini CLI, opencode and Qwen Code, unmodified and offline, crash-tested
# end to end through real processes: per agent one exploration of
# payment.toml holding the fault-free case (the coverage case: the agent ran
# the scenario to its end on faultlab's servers) and one kill case whose
# outcome follows from where the agent writes its session (docs/agents.md):
# - Gemini CLI records a model turn's tool calls only once the tools ran:
#   killed while charge_card's effect is applied and its reply held
#   (`tool/applied#1@0`), it has no trace of the call and charges again;
# - opencode records the call before running it and resumes it as
#   "[Tool execution was interrupted]" although the charge was applied;
# - Qwen Code writes its chat file behind: at this point its file held only
#   the user record in the exploration of docs/agents.md (one run), so the
#   call is lost and charged again; a less loaded machine may let the write
#   land first, so its codes are the ones a race may give.
# One reference run and one case (two agent processes) per agent, so each
# costs about three agent runs.  `.ci/run` installs the agents; elsewhere a
# test whose agent is missing is skipped with the command that installs it.
from __future__ import annotations

from pathlib import Path

import pytest

from faultlab import lab
from faultlab.lab.agents import find_adapter, installed
from faultlab.lab.campaigns.select import Selection
from faultlab.lab.process.tree import leftovers
from faultlab.scenario import load_scenario

ROOT = Path(__file__).resolve().parents[2]
PAYMENT = str(ROOT / "scenarios" / "payment.toml")
COVERAGE = "payment.toml::coverage[reference]"
KILL = "payment.toml::tool/applied#1@0ms[sigkill]"
pytestmark = pytest.mark.realprocess

# Per agent: the codes the kill case always gets, and the ones a race may add.
FINDINGS = [
    ("gemini-cli", {"TOOL_INTENT_LOST", "SIDE_EFFECT_DUPLICATED"}, set()),
    ("opencode", {"REPAIR_MISCLASSIFIED"}, set()),
    ("qwen-code", set(), {"TOOL_INTENT_LOST", "SIDE_EFFECT_DUPLICATED", "REPAIR_MISCLASSIFIED"}),
]


@pytest.mark.parametrize(("agent", "codes", "racy"), FINDINGS, ids=[f[0] for f in FINDINGS])
def test_fault_free_run_passes_and_a_kill_gives_its_verdict(
    tmp_path: Path, agent: str, codes: set[str], racy: set[str]
) -> None:
    if installed(find_adapter(agent)) is None:
        pytest.skip(f"{agent} is not installed (faultlab agents install {agent})")
    explored = lab.explore_agent([(PAYMENT, load_scenario(PAYMENT))], agent=agent,
                                 workdir=tmp_path, timeout=120, delays_ms=(0,),
                                 select=Selection(ids=frozenset({COVERAGE, KILL})))  # fmt: skip
    by_id = {r.case.id: r for r in explored.results}
    assert set(by_id) == {COVERAGE, KILL}
    coverage, kill = by_id[COVERAGE], by_id[KILL]
    assert coverage.verdict == "pass", [v.message for v in coverage.violations]
    messages = [v.message for v in kill.violations]
    assert codes <= set(kill.codes) <= codes | racy, messages
    assert kill.verdict == ("fail" if kill.codes else "pass"), messages
    # The agent's own session at the kill is kept for the report.
    assert any(name.startswith("at-kill:") for name in kill.artifacts), kill.artifacts
    assert leftovers(str(tmp_path)) == []
