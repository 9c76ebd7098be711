# LangGraph apps crash-tested through real child processes (the app drive):
# the example app without a repair runs a charge twice after invoke(None) and
# gets a history the model rejects after a re-sent message; with the recipe
# installed it passes; a broken recipe is caught by its classification.
from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("langgraph.checkpoint.sqlite")

from faultlab.lab.apps import AppOptions, run_app_case, run_app_reference
from faultlab.lab.oracle.case import Case
from faultlab.lab.process.reference import Reference
from faultlab.scenario import load_scenario

pytestmark = pytest.mark.realprocess

REPO = Path(__file__).resolve().parents[2]
PAYMENT = str(REPO / "scenarios" / "payment.toml")
PLAIN = "langgraph:examples.langgraph_refund:build_graph"
REPAIRED = "langgraph:examples.langgraph_refund.repaired:build_graph"
BROKEN = "langgraph:tests.fixtures.lgapps.broken_recipe:build_graph"


_REFERENCES: dict[tuple[str, str], tuple[AppOptions, Reference]] = {}


def _case(app: str, occurrence: str, fault: str, tmp: Path) -> tuple[tuple[str, ...], str]:
    """One case; the fault-free run of each app is made once per session."""
    key = (app, fault.split("/")[2])
    if key not in _REFERENCES:
        options = AppOptions(app, tmp, key[1])
        reference = run_app_reference(PAYMENT, load_scenario(PAYMENT), options)
        assert reference.returncode == 0, reference.stderr
        _REFERENCES[key] = (options, reference)
    options, reference = _REFERENCES[key]
    assert occurrence in reference.occurrences
    result = run_app_case(Case(PAYMENT, occurrence, fault), reference, options)
    return result.codes, result.verdict


@pytest.fixture(autouse=True)
def _repo_cwd(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)  # the child imports the apps from the working directory


def test_invoke_none_reruns_a_charge_killed_in_its_body(tmp_path: Path) -> None:
    codes, verdict = _case(PLAIN, "tool/effect#1", "sigkill/resume/sync", tmp_path)
    assert verdict == "fail"
    assert set(codes) == {"UNKNOWN_OUTCOME_RERUN", "SIDE_EFFECT_DUPLICATED"}


def test_resending_the_message_gets_a_rejected_history(tmp_path: Path) -> None:
    codes, _ = _case(PLAIN, "tool/started#1", "sigkill/resend/sync", tmp_path)
    assert codes == ("PROVIDER_INVALID_HISTORY",)


def test_the_recipe_passes_where_invoke_none_charged_twice(tmp_path: Path) -> None:
    codes, verdict = _case(REPAIRED, "tool/effect#1", "sigkill/hook/sync", tmp_path)
    assert (verdict, codes) == ("pass", ())


def test_a_recipe_that_says_not_started_for_a_started_call_is_caught(tmp_path: Path) -> None:
    codes, _ = _case(BROKEN, "tool/effect#1", "sigkill/hook/sync", tmp_path)
    assert "REPAIR_MISCLASSIFIED" in codes


def test_a_failed_checkpoint_write_stops_sync_and_not_async(tmp_path: Path) -> None:
    # checkpoint/put#3 is the checkpoint that schedules the tools task.
    assert _case(PLAIN, "checkpoint/put#3", "io-error/resume/sync", tmp_path) == ((), "pass")
    codes, _ = _case(PLAIN, "checkpoint/put#3", "io-error/resume/async", tmp_path)
    assert "DISPATCH_AFTER_FAILED_CHECKPOINT" in codes
