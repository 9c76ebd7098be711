# OpenAI Agents SDK apps (`--app openai-agents:...`, issue 32 item 5)
# through real children, judged against the world ledger: the user's Agent
# run with Runner and persisted by the user's Session, the SDK's
# SQLiteSession (the example) and a custom Session subclass (a JSONL file).
# Without the recipe, a kill in the charge's body leaves no trace of the
# call (the SDK stores a step's calls with their outputs, after the tools
# ran) and the next run charges again; with the recipe (write-ahead hooks
# and the repair) the same case passes; a broken repair is caught; the
# write-ahead alone leaves a session whose call is never answered (the SDK
# leaves the unanswered call out of what it sends the model, and keeps it).
from __future__ import annotations

from pathlib import Path

import pytest

from faultlab.lab import run_app_single

pytest.importorskip("agents")
pytestmark = pytest.mark.realprocess

REPO = Path(__file__).resolve().parents[2]
PAYMENT = str(REPO / "scenarios" / "payment.toml")
# A charge the tool rejects once, then a receipt tool that fails.
RETRIES = str(REPO / "tests" / "fixtures" / "paapps" / "retries.toml")
EXAMPLE = "openai-agents:examples.openai_agents_refund"
FIXTURES = "openai-agents:tests.fixtures.oaapps"
LOST = {"TOOL_INTENT_LOST", "UNKNOWN_OUTCOME_RERUN", "SIDE_EFFECT_DUPLICATED"}


@pytest.fixture(autouse=True)
def _repo_cwd(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)  # the child imports the apps from the working directory


# (app, occurrence, case fault, verdict, codes: all of them)
CASES = [
    pytest.param(f"{EXAMPLE}:build_agent", "tool/effect#1", "sigkill/resume/run", "fail", LOST,
                 id="sqlite-session-charges-twice"),
    pytest.param(f"{EXAMPLE}:build_agent", "model/request#2", "sigkill/resume/run", "pass",
                 set(), id="sqlite-session-after-the-step-is-stored"),
    pytest.param(f"{EXAMPLE}.repaired:build_agent", "tool/effect#1", "sigkill/hook/run", "pass",
                 set(), id="sqlite-session-recipe-passes"),
    pytest.param(f"{FIXTURES}.broken_recipe:build_agent", "tool/effect#1", "sigkill/hook/run",
                 "fail", {"REPAIR_MISCLASSIFIED"}, id="broken-recipe-is-caught"),
    pytest.param(f"{FIXTURES}.jsonl_session:build_agent", "tool/effect#1", "sigkill/resend/run",
                 "fail", LOST, id="custom-session-charges-twice"),
    pytest.param(f"{FIXTURES}.jsonl_repaired:build_agent", "tool/effect#1", "sigkill/hook/run",
                 "pass", set(), id="custom-session-recipe-passes"),
    pytest.param(f"{EXAMPLE}.repaired:build_agent", "tool/effect#1", "sigkill/resume/run",
                 "fail", {"PROVIDER_INVALID_HISTORY"},
                 id="write-ahead-without-the-repair-leaves-an-invalid-session"),
]  # fmt: skip


@pytest.mark.parametrize(("app", "occurrence", "fault", "verdict", "codes"), CASES)
def test_an_agents_sdk_app_case(app: str, occurrence: str, fault: str, verdict: str,
                                codes: set[str], tmp_path: Path) -> None:  # fmt: skip
    result = run_app_single(PAYMENT, occurrence, app=app, fault=fault, workdir=tmp_path)
    assert (result.verdict, set(result.codes)) == (verdict, codes), result.violations
    if verdict == "pass" and "hook" in fault:
        # The session, read through the app's own Session: the charge's
        # call, answered by the repair, and one charge in the world.
        case_dir = Path(result.artifacts["dir"])
        final = (case_dir / "final.thread.json").read_text()
        assert "call_0_0_0" in final and "TOOL_OUTCOME_UNKNOWN" in final
        assert len((case_dir / "world.jsonl").read_bytes().splitlines()) == 1


def test_a_failing_tool_is_answered_to_the_model(tmp_path: Path) -> None:
    # The scripted tool's rejection and failure reach the model as the
    # call's output (a @function_tool's default), so the fault-free run
    # completes and a case runs: the corrected charge killed in its body,
    # repaired, passes with one charge.  Raised from the FunctionTool, they
    # ended the fault-free run (UserError: REFERENCE_FAILED, no case).
    result = run_app_single(RETRIES, "tool/effect#1", app=f"{EXAMPLE}.repaired:build_agent",
                            fault="sigkill/hook/run", workdir=tmp_path)  # fmt: skip
    assert (result.verdict, result.codes) == ("pass", ()), result.violations
    case_dir = Path(result.artifacts["dir"])
    final = (case_dir / "final.thread.json").read_text()
    assert "error: " in final and "the mail server is down" in final
    assert len((case_dir / "world.jsonl").read_bytes().splitlines()) == 1
