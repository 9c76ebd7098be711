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
# any case; ADK's own invocation resumption of a resumable App is judged
# too (resume style `invocation`).  One fork server serves every
# ADK app here (faultlab/lab/apps/drive.py `_SERVER_PER_FRAMEWORK`).
from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from faultlab.lab import LabUsageError, run_app_single

pytest.importorskip("google.adk")
pytest.importorskip("sqlalchemy")
pytestmark = pytest.mark.realprocess

REPO = Path(__file__).resolve().parents[2]
PAYMENT = str(REPO / "scenarios" / "payment.toml")
EXAMPLE = "google-adk:examples.google_adk_refund"
FIXTURES = "google-adk:tests.fixtures.adkapps"
RESUMABLE = f"{FIXTURES}.resumable"


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


# ADK's own resumption of an invocation (resume style `invocation`): a
# resumable `App` (ResumabilityConfig(is_resumable=True)) killed in the
# charge is resumed with `Runner.run_async(..., invocation_id=...)`, the id
# of the crashed invocation read from the stored session.  ADK runs a
# stored call that has no response again, under the same id: killed before
# the body started, the charge runs once (pass); after its effect, twice
# (fail).  With the recipe's mark stored after the call, ADK waits on the
# call instead and the turn never ends (fail).  An app that is not
# resumable is refused before any case.
# (app, occurrence, verdict, codes, the charges' call ids in the world ledger)
RESUME_CASES = [
    # The call stored, its body not started: ADK dispatches it on resumption.
    pytest.param(f"{RESUMABLE}:build_app", "history/save-done#2", "pass", set(),
                 ["call_0_0_0"], id="a-call-never-started-runs-once"),
    # The charge applied, its response not stored: ADK dispatches it again.
    pytest.param(f"{RESUMABLE}:build_app", "tool/effect#1", "fail",
                 {"UNKNOWN_OUTCOME_RERUN", "SIDE_EFFECT_DUPLICATED"},
                 ["call_0_0_0", "call_0_0_0"], id="a-charged-call-runs-again"),
    # A content-less event after the call (the recipe's mark): ADK waits
    # for its response, as for a long-running call, and ends the run.
    pytest.param(f"{RESUMABLE}:build_marked_app", "tool/effect#1", "fail", {"RESUME_FAILED"},
                 ["call_0_0_0"], id="a-marked-call-is-waited-on-forever"),
]  # fmt: skip


@pytest.mark.parametrize(("app", "occurrence", "verdict", "codes", "charges"), RESUME_CASES)
def test_adk_resumes_the_crashed_invocation(app: str, occurrence: str, verdict: str,
                                            codes: set[str], charges: list[str],
                                            tmp_path: Path) -> None:  # fmt: skip
    result = run_app_single(PAYMENT, occurrence, app=app, fault="sigkill/invocation/run",
                            workdir=tmp_path)  # fmt: skip
    assert (result.verdict, set(result.codes)) == (verdict, codes), result.violations
    case_dir = Path(result.artifacts["dir"])
    ledger = [orjson.loads(r) for r in (case_dir / "world.jsonl").read_bytes().splitlines()]
    assert [r["callId"] for r in ledger] == charges
    records = [orjson.loads(r) for r in (case_dir / "records.jsonl").read_bytes().splitlines()]
    resumed = [r for r in records if r.get("fact") == "app/resume"]
    # The recovery resumed the invocation the crashed run had stored (no
    # message sent again): the model was not asked for the call anew.
    assert len(resumed) == 1 and isinstance(resumed[0]["invocation"], str)
    assert not any("_invocation" in str(r.get("callId", "")) for r in records)


def test_an_app_that_is_not_resumable_is_refused(tmp_path: Path) -> None:
    with pytest.raises(LabUsageError, match="is not resumable"):
        run_app_single(PAYMENT, "tool/effect#1", app=f"{EXAMPLE}:build_agent",
                       fault="sigkill/invocation/run", workdir=tmp_path)  # fmt: skip
