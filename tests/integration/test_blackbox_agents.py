# Real agents, unmodified, crash-tested end to end (`--agent`): each one is
# killed inside charge_card's body (`tool/applied#1@0`: the card is charged,
# the tool server holds its reply) and resumed.  What each does there is its
# documented finding (docs/agents.md): the Agents SDK app kept no trace of
# the call and charges again, Codex tells the model the applied call was
# "aborted", Claude Code says the outcome is unknown and does not retry, or,
# when the kill beats its asynchronous session write, cannot find its session
# at all (a race: 1 of 8 runs here; docs/agents.md "Stability").
# `.ci/run` installs the agents (faultlab agents install); elsewhere a test
# whose agent is missing is skipped with the command that installs it.
from __future__ import annotations

from pathlib import Path

import pytest

from faultlab import lab
from faultlab.lab.agents import find_adapter, installed
from faultlab.lab.process.tree import leftovers

ROOT = Path(__file__).resolve().parents[2]
PAYMENT = str(ROOT / "scenarios" / "payment.toml")
pytestmark = pytest.mark.realprocess


def need(agent: str) -> None:
    if installed(find_adapter(agent)) is None:
        pytest.skip(f"{agent} is not installed (faultlab agents install {agent})")


# Per agent: the codes it must get, and the ones a lost race may add.
FINDINGS = [
    ("openai-agents", {"TOOL_INTENT_LOST", "SIDE_EFFECT_DUPLICATED"}, set()),
    ("codex", {"REPAIR_MISCLASSIFIED"}, set()),
    ("claude-code", set(), {"SESSION_NOT_FOUND"}),
]


@pytest.mark.parametrize(("agent", "codes", "racy"), FINDINGS, ids=[f[0] for f in FINDINGS])
def test_a_kill_in_the_tool_body(
    tmp_path: Path, agent: str, codes: set[str], racy: set[str]
) -> None:
    need(agent)
    result = lab.run_agent_case(PAYMENT, "tool/applied#1@0", agent=agent, workdir=tmp_path,
                                timeout=180)  # fmt: skip
    messages = [v.message for v in result.violations]
    assert codes <= set(result.codes) <= codes | racy, messages
    assert result.verdict == ("fail" if result.codes else "pass"), messages
    # The agent's own session, as it was at the kill, is kept for the report.
    assert any(name.startswith("at-kill:") for name in result.artifacts), result.artifacts
    assert leftovers(str(tmp_path)) == []


def test_codex_tool_server_outlives_a_kill_of_its_group(tmp_path: Path) -> None:
    # Codex starts its MCP servers in process groups of their own: killing
    # the agent's group (`sigkill-agent`) while charge_card is held at
    # tool/received spares the server, which charges the card after Codex
    # died; resumed, Codex calls the call "aborted", and a retry-prone model
    # charges again.
    need("codex")
    result = lab.run_agent_case(str(ROOT / "scenarios" / "payment-retry.toml"),
                                "tool/received#1@0", agent="codex", fault="sigkill-agent",
                                workdir=tmp_path, timeout=180)  # fmt: skip
    messages = [v.message for v in result.violations]
    assert set(result.codes) == {"REPAIR_MISCLASSIFIED", "SIDE_EFFECT_DUPLICATED"}, messages
    assert leftovers(str(tmp_path)) == []
