# Framework apps crash-tested through real child processes (the app drive),
# LangGraph and pydantic-ai in one table.  Without a repair, the framework's
# own resume runs a charge killed in its body again; re-sending the message
# gets a history the model rejects (LangGraph) or a refusal (pydantic-ai);
# pydantic-ai's own repair_messages does not tell "never started" from "may
# have run"; with faultlab's recipe installed the same case passes; a broken
# recipe is caught by its classification; and a failed checkpoint write
# stops LangGraph in `sync` but not in `async`.
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from faultlab.lab import run_app_single

pytestmark = pytest.mark.realprocess

REPO = Path(__file__).resolve().parents[2]
PAYMENT = str(REPO / "scenarios" / "payment.toml")
LG = "langgraph:examples.langgraph_refund"
PA = "pydantic-ai:examples.pydantic_ai_refund"
RERUN = {"UNKNOWN_OUTCOME_RERUN", "SIDE_EFFECT_DUPLICATED"}


def _needs(module: str) -> pytest.MarkDecorator:
    try:
        missing = importlib.util.find_spec(module) is None
    except ModuleNotFoundError:  # its parent package is missing
        missing = True
    return pytest.mark.skipif(missing, reason=f"{module} is not installed")


_LANGGRAPH = _needs("langgraph.checkpoint.sqlite")
_PYDANTIC_AI = _needs("pydantic_ai")

# (app, occurrence, case fault, verdict, codes, exact: the codes are all of them)
CASES = [
    pytest.param(f"{LG}:build_graph", "tool/effect#1", "sigkill/resume/sync", "fail", RERUN,
                 True, id="langgraph-resume-reruns-the-charge", marks=_LANGGRAPH),
    pytest.param(f"{LG}:build_graph", "tool/started#1", "sigkill/resend/sync", "fail",
                 {"PROVIDER_INVALID_HISTORY"}, True, id="langgraph-resend-is-rejected",
                 marks=_LANGGRAPH),
    pytest.param(f"{LG}.repaired:build_graph", "tool/effect#1", "sigkill/hook/sync", "pass",
                 set(), True, id="langgraph-recipe-passes", marks=_LANGGRAPH),
    pytest.param("langgraph:tests.fixtures.lgapps.broken_recipe:build_graph", "tool/effect#1",
                 "sigkill/hook/sync", "fail", {"REPAIR_MISCLASSIFIED"}, False,
                 id="langgraph-broken-recipe-is-caught", marks=_LANGGRAPH),
    pytest.param(f"{PA}:build_agent", "tool/effect#1", "sigkill/resume/node", "fail", RERUN,
                 True, id="pydantic-ai-resume-reruns-the-charge", marks=_PYDANTIC_AI),
    pytest.param(f"{PA}:build_agent", "tool/effect#1", "sigkill/resend/node", "fail",
                 {"RESUME_FAILED"}, True, id="pydantic-ai-refuses-the-resent-message",
                 marks=_PYDANTIC_AI),
    pytest.param(f"{PA}:build_agent", "tool/effect#1", "sigkill/repair/node", "fail",
                 {"REPAIR_MISCLASSIFIED"}, True, id="pydantic-ai-repair-messages-misclassifies",
                 marks=_PYDANTIC_AI),
    pytest.param(f"{PA}.repaired:build_agent", "tool/effect#1", "sigkill/hook/node", "pass",
                 set(), True, id="pydantic-ai-recipe-passes", marks=_PYDANTIC_AI),
    pytest.param("pydantic-ai:tests.fixtures.paapps.broken_recipe:build_agent", "tool/effect#1",
                 "sigkill/hook/node", "fail", {"REPAIR_MISCLASSIFIED"}, False,
                 id="pydantic-ai-broken-recipe-is-caught", marks=_PYDANTIC_AI),
]  # fmt: skip


@pytest.fixture(autouse=True)
def _repo_cwd(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)  # the child imports the apps from the working directory


def _case(app: str, occurrence: str, fault: str, tmp: Path) -> tuple[tuple[str, ...], str]:
    """One case, as `faultlab replay` runs it (the fault-free run first)."""
    result = run_app_single(PAYMENT, occurrence, app=app, fault=fault, workdir=tmp)
    return result.codes, result.verdict


@pytest.mark.parametrize(("app", "occurrence", "fault", "verdict", "codes", "exact"), CASES)
def test_an_app_case_gets_its_codes(
    app: str, occurrence: str, fault: str, verdict: str, codes: set[str], exact: bool,
    tmp_path: Path,
) -> None:
    found, found_verdict = _case(app, occurrence, fault, tmp_path)
    assert found_verdict == verdict, found
    assert set(found) == codes if exact else codes <= set(found), found


@_LANGGRAPH
def test_a_failed_checkpoint_write_stops_sync_and_not_async(tmp_path: Path) -> None:
    # checkpoint/put#3 is the checkpoint that schedules the tools task: in
    # `sync` its failure stops the graph.  In `async` the background writer
    # races the step there (the tools may start before the write does; the
    # suite saw that twice under load), so the async side is the first
    # pending-writes write, which the model call follows in every run
    # measured (10 of 10, quiet and under load).
    plain = f"{LG}:build_graph"
    assert _case(plain, "checkpoint/put#3", "io-error/resume/sync", tmp_path) == ((), "pass")
    codes, _ = _case(plain, "checkpoint/writes#1", "io-error/resume/async", tmp_path)
    assert "DISPATCH_AFTER_FAILED_CHECKPOINT" in codes
