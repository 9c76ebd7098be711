# Real agents, unmodified, crash-tested end to end (`--agent`), each at a kill
# point whose outcome was stable over repeats here (docs/agents.md
# "Stability"): inside charge_card's body (`tool/applied#1@0`: the card is
# charged, the tool server holds its reply) the Agents SDK app kept no trace
# of the call and charges again, and Codex tells the model the applied call
# was "aborted".  Claude Code writes its session a little behind: killed
# when the tool server has received a call (`tool/received#1@0`) it has, or
# has not yet, a trace of the call (pass or TOOL_INTENT_LOST, about half and
# half here), so only the codes a lost race may give are asserted for it.
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


# Per agent: the kill point, the codes it always gets there, and the ones a
# race may add.
FINDINGS = [
    ("openai-agents", "tool/applied#1@0", {"TOOL_INTENT_LOST", "SIDE_EFFECT_DUPLICATED"}, set()),
    # Streamed (Runner.run_streamed): the model's stream has boundaries to be
    # killed at (run unstreamed, the fault-free run never reaches model/chunk#2,
    # a usage error); the user's message is in the session by then.
    ("openai-agents", "model/chunk#2@0", set(), set()),
    ("codex", "tool/applied#1@0", {"REPAIR_MISCLASSIFIED"}, set()),
    ("claude-code", "tool/received#1@0", set(), {"TOOL_INTENT_LOST", "SESSION_NOT_FOUND"}),
    # The Claude Agent SDK runs the same CLI (its bundled 2.1.332): the same race.
    ("claude-agent-sdk", "tool/received#1@0", set(), {"TOOL_INTENT_LOST", "SESSION_NOT_FOUND"}),
    # Outcome unknown on resume, with guidance to verify (.ci/run installs its 319 MB).
    ("deepseek-harness", "tool/applied#1@0", set(), set()),
]


@pytest.mark.parametrize(("agent", "point", "codes", "racy"), FINDINGS,
                         ids=[f"{f[0]}-{f[1]}" for f in FINDINGS])  # fmt: skip
def test_a_kill_at_a_tool_boundary(
    tmp_path: Path, agent: str, point: str, codes: set[str], racy: set[str]
) -> None:
    need(agent)
    result = lab.run_agent_case(PAYMENT, point, agent=agent, workdir=tmp_path, timeout=180)
    messages = [v.message for v in result.violations]
    assert codes <= set(result.codes) <= codes | racy, messages
    assert result.verdict == ("fail" if result.codes else "pass"), messages
    # The agent's own session, as it was at the kill, is kept for the report
    # (unless the kill came before the agent wrote any: its session is not found).
    if "SESSION_NOT_FOUND" not in result.codes:
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
