# pydantic-ai apps crash-tested through real child processes (the app
# drive): the example app that saves its history after every node runs a
# charge twice when it resumes the run from the stored history, refuses the
# user's re-sent message, and pydantic-ai's own repair_messages answers the
# gap with an undifferentiated "interrupted"; with the recipe installed it
# passes; a broken recipe is caught by its classification.
from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pydantic_ai")

from faultlab.lab.apps import AppOptions, run_app_case, run_app_reference
from faultlab.lab.oracle.case import Case
from faultlab.lab.process.reference import Reference
from faultlab.scenario import load_scenario

pytestmark = pytest.mark.realprocess

REPO = Path(__file__).resolve().parents[2]
PAYMENT = str(REPO / "scenarios" / "payment.toml")
PLAIN = "pydantic-ai:examples.pydantic_ai_refund:build_agent"
REPAIRED = "pydantic-ai:examples.pydantic_ai_refund.repaired:build_agent"
BROKEN = "pydantic-ai:tests.fixtures.paapps.broken_recipe:build_agent"

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


def test_resuming_the_run_reruns_a_charge_killed_in_its_body(tmp_path: Path) -> None:
    codes, verdict = _case(PLAIN, "tool/effect#1", "sigkill/resume/node", tmp_path)
    assert verdict == "fail"
    assert set(codes) == {"UNKNOWN_OUTCOME_RERUN", "SIDE_EFFECT_DUPLICATED"}


def test_the_frameworks_repair_does_not_tell_started_from_not(tmp_path: Path) -> None:
    codes, _ = _case(PLAIN, "tool/effect#1", "sigkill/repair/node", tmp_path)
    assert codes == ("REPAIR_MISCLASSIFIED",)


def test_the_recipe_passes_where_the_resume_charged_twice(tmp_path: Path) -> None:
    codes, verdict = _case(REPAIRED, "tool/effect#1", "sigkill/hook/node", tmp_path)
    assert (verdict, codes) == ("pass", ())


def test_a_recipe_that_says_not_started_for_a_started_call_is_caught(tmp_path: Path) -> None:
    codes, _ = _case(BROKEN, "tool/effect#1", "sigkill/hook/node", tmp_path)
    assert "REPAIR_MISCLASSIFIED" in codes
