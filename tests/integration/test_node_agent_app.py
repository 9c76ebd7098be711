# An agent app of a team's own, in another language, crash-tested through
# its adapter file (docs/agents.md, "Bring your own agent app"): the Node app
# of examples/node_agent_app/ (the official MCP TypeScript SDK, the `openai`
# client, a JSONL session appended and fsynced per message, a call recorded
# before it runs), run for real under faultlab.  Killed inside charge_card's
# body (`tool/applied#1@0`: the card is charged, the reply held) it resumes
# with the call answered "outcome unknown", and killed at the second model
# request it resumes with the call and its real result: both pass.  The same
# app behind an adapter whose resume starts a fresh session is caught.
# `.ci/run` sets the app up (npm ci); elsewhere the test skips without node or
# without the app's node_modules.
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from faultlab import lab
from faultlab.lab.process.tree import leftovers
from faultlab.lab.read.agentlogs import read_agent_log

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "examples" / "node_agent_app"
ADAPTER = str(APP / "adapter.toml")
PAYMENT = str(ROOT / "scenarios" / "payment.toml")
pytestmark = pytest.mark.realprocess


@pytest.fixture(autouse=True)
def _need_the_app() -> None:
    if shutil.which("node") is None:
        pytest.skip("node is not on PATH (the example app is a Node app)")
    for package in ("@modelcontextprotocol/sdk", "openai"):
        if not (APP / "node_modules" / package / "package.json").is_file():
            pytest.skip(f"the example app's {package} is not installed "
                        f"(npm ci --prefix {APP.relative_to(ROOT)})")  # fmt: skip


def test_killed_inside_the_tool_body_it_resumes_with_an_unknown_outcome(tmp_path: Path) -> None:
    result = lab.run_agent_case(PAYMENT, "tool/applied#1@0", agent=ADAPTER, workdir=tmp_path,
                                timeout=120)  # fmt: skip
    assert result.verdict == "pass", [v.message for v in result.violations]
    # At the kill the session held the call, recorded before it ran, and no result.
    at_kill = [path for name, path in result.artifacts.items() if name.startswith("at-kill:")]
    assert at_kill, result.artifacts
    history = read_agent_log("openai-chat-jsonl", at_kill[0]).history.to_json()
    assert [m["role"] for m in history] == ["user", "assistant"], history
    assert history[1]["calls"][0]["name"] == "charge_card", history
    # The resumed app answered it as an unknown outcome, not as a failure.
    records = Path(result.artifacts["records"]).read_text()
    assert "outcome of this call is unknown" in records
    assert leftovers(str(tmp_path)) == []


def test_killed_at_the_second_model_request_it_resumes_with_the_real_result(
    tmp_path: Path,
) -> None:
    result = lab.run_agent_case(PAYMENT, "model/request#2@0", agent=ADAPTER, workdir=tmp_path,
                                timeout=120)  # fmt: skip
    assert result.verdict == "pass", [v.message for v in result.violations]
    records = Path(result.artifacts["records"]).read_text()
    assert "charged 40.00 EUR" in records and "outcome of this call is unknown" not in records
    assert leftovers(str(tmp_path)) == []


def test_an_adapter_whose_resume_starts_afresh_is_caught(tmp_path: Path) -> None:
    # The same app, its adapter broken: the resume names another session file,
    # so the resumed app has no trace of the charge (a mistake an adapter of
    # one's own can make; the oracle, not the app, must catch it).
    folder = tmp_path / "broken"
    folder.mkdir()
    # Linked: node resolves the app's packages beside the real file.
    (folder / "app.mjs").symlink_to(APP / "app.mjs")
    text = (APP / "adapter.toml").read_text(encoding="utf-8")
    broken = text.replace('"--mcp-config", "{mcp_config}", "--resume", "{prompt}"]',
                          '"--mcp-config", "{mcp_config}", "{prompt}"]')
    broken = broken.replace('resume = ["node", "{binary}", "--session", "{home}/session.jsonl",',
                            'resume = ["node", "{binary}", "--session", "{home}/other.jsonl",')
    assert broken.count("other.jsonl") == 1 and '"--resume"' not in broken
    (folder / "adapter.toml").write_text(broken, encoding="utf-8")
    result = lab.run_agent_case(PAYMENT, "tool/applied#1@0", agent=str(folder / "adapter.toml"),
                                workdir=tmp_path / "w", timeout=120)  # fmt: skip
    assert result.verdict == "fail"
    assert "SESSION_NOT_FOUND" in result.codes, [v.message for v in result.violations]
    assert leftovers(str(tmp_path)) == []
