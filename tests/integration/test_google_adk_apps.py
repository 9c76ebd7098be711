# Google ADK apps (`--app google-adk:...`, issue 32 item 5) through real
# children, judged against the world ledger: the user's Agent under ADK's
# Runner, persisted by ADK's DatabaseSessionService on SQLite.  Without the
# recipe, a kill in the charge's body leaves the stored call unanswered:
# ADK's next run leaves it out of what it sends the model (the model is
# never told the charge may have gone through) and keeps it stored, a
# session that breaks the model APIs' pairing rules.  With the recipe the
# same case passes with one charge in the world; a broken repair (answering
# TOOL_NOT_STARTED for a call whose body ran) is caught; a stale second
# writer is refused by ADK; an in-memory SessionService is refused before
# any case.  One fork server serves every
# ADK app here (faultlab/lab/apps/drive.py `_SERVER_PER_FRAMEWORK`).
from __future__ import annotations

from pathlib import Path

import pytest

from faultlab.lab import LabUsageError, run_app_single

pytest.importorskip("google.adk")
pytest.importorskip("sqlalchemy")
pytestmark = pytest.mark.realprocess

REPO = Path(__file__).resolve().parents[2]
PAYMENT = str(REPO / "scenarios" / "payment.toml")
EXAMPLE = "google-adk:examples.google_adk_refund"
FIXTURES = "google-adk:tests.fixtures.adkapps"


@pytest.fixture(autouse=True)
def _repo_cwd(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)  # the child imports the apps from the working directory


# (app, occurrence, case fault, verdict, codes: all of them, the charges in
# the world, how the recipe answered the charge's call)
CASES = [
    pytest.param(f"{EXAMPLE}:build_agent", "tool/effect#1", "sigkill/resend/run", "fail",
                 {"PROVIDER_INVALID_HISTORY"}, 1, None, id="database-session-drops-the-charge"),
    pytest.param(f"{EXAMPLE}.repaired:build_agent", "tool/effect#1", "sigkill/hook/run", "pass",
                 set(), 1, "TOOL_OUTCOME_UNKNOWN", id="database-session-recipe-passes"),
    # Killed once the call is stored, before the recipe's mark: never started.
    pytest.param(f"{EXAMPLE}.repaired:build_agent", "history/save-done#2", "sigkill/hook/run",
                 "pass", set(), 0, "TOOL_NOT_STARTED", id="recipe-says-not-started"),
    pytest.param(f"{FIXTURES}.app_object:build_app", "tool/effect#1", "sigkill/hook/run",
                 "pass", set(), 1, "TOOL_OUTCOME_UNKNOWN",
                 id="an-app-object-with-the-recipe-passes"),
    pytest.param(f"{FIXTURES}.broken_recipe:build_agent", "tool/effect#1", "sigkill/hook/run",
                 "fail", {"REPAIR_MISCLASSIFIED"}, 1, "TOOL_NOT_STARTED",
                 id="broken-recipe-is-caught"),
    pytest.param(f"{FIXTURES}.unmarked:build_agent", "tool/effect#1", "sigkill/hook/run",
                 "fail", {"REPAIR_MISCLASSIFIED"}, 1, "TOOL_NOT_STARTED",
                 id="marks-trusted-but-never-written-is-caught"),
    # A second process runs the turn while the first is held before its
    # model call: ADK refuses the first's next write (StaleSessionError),
    # the refusal the guarantee asks for; one charge, one linear session.
    pytest.param(f"{EXAMPLE}.repaired:build_agent", "model/request#1",
                 "second-writer/resume/run", "pass", set(), 1, None,
                 id="stale-writer-is-refused"),
]  # fmt: skip


@pytest.mark.parametrize(("app", "occurrence", "fault", "verdict", "codes", "charges", "said"),
                         CASES)  # fmt: skip
def test_an_adk_app_case(app: str, occurrence: str, fault: str, verdict: str, codes: set[str],
                         charges: int, said: str | None, tmp_path: Path) -> None:  # fmt: skip
    result = run_app_single(PAYMENT, occurrence, app=app, fault=fault, workdir=tmp_path)
    assert (result.verdict, set(result.codes)) == (verdict, codes), result.violations
    case_dir = Path(result.artifacts["dir"])
    # The world ledger: the charge ran at most once; nothing ran it again.
    assert len((case_dir / "world.jsonl").read_bytes().splitlines()) == charges
    if said is not None:
        # The session as the lab reads ADK's tables: the charge's call,
        # answered once by the repair, with the class it was given.
        final = (case_dir / "final.thread.json").read_text()
        assert "call_0_0_0" in final and final.count(said) == 1


def test_an_in_memory_session_service_is_refused(tmp_path: Path) -> None:
    with pytest.raises(LabUsageError, match="InMemorySessionService, which keeps nothing"):
        run_app_single(PAYMENT, "tool/effect#1", app=f"{FIXTURES}.in_memory:build_agent",
                       fault="sigkill/resend/run", workdir=tmp_path)  # fmt: skip
