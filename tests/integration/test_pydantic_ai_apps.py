# pydantic-ai apps of other shapes than the example, through real children
# (issue 32, item 2), judged against the world ledger: an app whose agent
# needs `deps` (the module's `make_deps()`) and whose store is its own
# SQLite database read only through its `load_history`; the same app with
# the recipe (must pass) and without (must fail: the charge runs twice);
# an app whose loader raises, or dies, on what the crash left
# (STORE_UNREADABLE, never an empty history); and the same app without
# `make_deps()` (its fault-free run fails: the deps reach the agent only
# through it).
from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from faultlab.lab import run_app_single

pytest.importorskip("pydantic_ai")
pytestmark = pytest.mark.realprocess

REPO = Path(__file__).resolve().parents[2]
PAYMENT = str(REPO / "scenarios" / "payment.toml")
SHOP = "pydantic-ai:tests.fixtures.paapps"


@pytest.fixture(autouse=True)
def _repo_cwd(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)  # the child imports the apps from the working directory


# (app module, case fault, verdict, codes: all of them)
CASES = [
    pytest.param("shop", "sigkill/resume/node", "fail",
                 {"UNKNOWN_OUTCOME_RERUN", "SIDE_EFFECT_DUPLICATED"}, id="own-store-resume-reruns"),
    pytest.param("shop_repaired", "sigkill/hook/node", "pass", set(), id="own-store-recipe-passes"),
    pytest.param("strict_store", "sigkill/resume/node", "fail", {"STORE_UNREADABLE"},
                 id="loader-raises"),
    pytest.param("dying_store", "sigkill/resume/node", "fail", {"STORE_UNREADABLE"},
                 id="loader-dies"),
]  # fmt: skip


@pytest.mark.parametrize(("module", "fault", "verdict", "codes"), CASES)
def test_an_app_with_its_own_store_and_deps(
    module: str, fault: str, verdict: str, codes: set[str], tmp_path: Path
) -> None:
    result = run_app_single(PAYMENT, "tool/effect#1", app=f"{SHOP}.{module}:build_agent",
                            fault=fault, workdir=tmp_path)  # fmt: skip
    assert (result.verdict, set(result.codes)) == (verdict, codes), result.violations
    case_dir = Path(result.artifacts["dir"])
    if verdict == "pass":
        # The store was read through the app's loader: the charge's call and
        # the recipe's answer to it, from the app's own SQLite rows.
        final = (case_dir / "final.thread.json").read_text()
        assert "call_0_0_0" in final and "TOOL_OUTCOME_UNKNOWN" in final
    if "STORE_UNREADABLE" in codes:
        message = result.violations[0].message
        assert message.startswith("at the kill: ")
        assert ("corrupt history: call_0_0_0 is unanswered" in message
                or "it exited 7" in message)  # fmt: skip


def test_deps_reach_the_agent_only_through_make_deps(tmp_path: Path) -> None:
    result = run_app_single(PAYMENT, "tool/effect#1", app=f"{SHOP}.nodeps:build_agent",
                            fault="sigkill/resume/node", workdir=tmp_path)  # fmt: skip
    assert result.codes == ("REFERENCE_FAILED",)
    assert "'NoneType' object has no attribute 'payments_open'" in result.violations[0].message


# -- retries: a tool that asks for a retry (ModelRetry) and one that fails ---

RETRIES = str(REPO / "tests" / "fixtures" / "paapps" / "retries.toml")
EXAMPLE = "pydantic-ai:examples.pydantic_ai_refund"


def test_a_retried_call_then_the_charge_with_the_recipe_passes(tmp_path: Path) -> None:
    # Killed at the corrected charge's effect, after a ModelRetry: the
    # recipe answers the charge as unknown, one charge in the world.
    result = run_app_single(RETRIES, "tool/effect#1", app=f"{EXAMPLE}.repaired:build_agent",
                            fault="sigkill/hook/node", workdir=tmp_path)  # fmt: skip
    assert (result.verdict, result.codes) == ("pass", ()), result.violations
    case_dir = Path(result.artifacts["dir"])
    at_kill = orjson.loads((case_dir / "at-kill.thread.json").read_bytes())["history"]
    # pydantic-ai's retry prompt answered the rejected call (a failed tool
    # message), and the model called again with the corrected amount.
    assert at_kill[2] == {"role": "tool", "text": at_kill[2]["text"], "callId": "call_0_0_0",
                          "isError": True}  # fmt: skip
    assert "call charge_card again" in at_kill[2]["text"]
    assert at_kill[3]["calls"][0]["arguments"] == {"amount": 40, "currency": "EUR"}
    final = orjson.loads((case_dir / "final.thread.json").read_bytes())["history"]
    receipt = [m for m in final if m.get("callId") == "call_0_2_0"]
    assert receipt == [{"role": "tool", "text": "the mail server is down",
                        "callId": "call_0_2_0", "isError": True}]  # fmt: skip
    ledger = (case_dir / "world.jsonl").read_bytes().splitlines()
    assert len(ledger) == 1 and orjson.loads(ledger[0])["arguments"]["amount"] == 40


def test_a_retried_call_then_the_charge_without_the_recipe_charges_twice(
    tmp_path: Path,
) -> None:
    result = run_app_single(RETRIES, "tool/effect#1", app=f"{EXAMPLE}:build_agent",
                            fault="sigkill/resume/node", workdir=tmp_path)  # fmt: skip
    assert result.verdict == "fail"
    assert set(result.codes) == {"UNKNOWN_OUTCOME_RERUN", "SIDE_EFFECT_DUPLICATED"}
