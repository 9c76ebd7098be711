# The ACP drive's in-process logic (faultlab/lab/acp/drive.py, its fault
# table faultlab/lab/acp/faults.py): which faults `--drive acp` takes and in
# what order, the cases planned from a reference trace, what tells its faults
# apart, the agent command, the child a case would start (built, never
# started), the `_meta.faultlab.nextPrompt` reader, and how `run_driven`
# turns a client session's outcome or failure into a verdict.  No process
# is started.
from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import acp
import pytest

from faultlab.lab.acp.drive import (
    AcpOptions,
    Outcome,
    acp_target,
    meta_next,
    run_driven,
    session_files,
)
from faultlab.lab.acp.faults import ACP_FAULTS, CANCEL, KILL, STOP
from faultlab.lab.errors import LabUsageError
from faultlab.lab.faults.fault import Planning, all_names, parse_fault_names, plan_faults
from faultlab.lab.oracle.case import Case
from faultlab.lab.oracle.codes import Violation
from faultlab.lab.process.reference import Reference
from faultlab.lab.process.spawn import ChildHung
from faultlab.lab.read.view import LogView
from faultlab.scenario import load_scenario

SCENARIOS = Path(__file__).resolve().parents[4] / "scenarios"
SCENARIO_PATH = str(SCENARIOS / "payment.toml")

# A probe trace shaped like the runtime's: a top-level call, a nested call
# (parentCallId), a flush and facts that are not boundaries.
TRACE: tuple[dict[str, Any], ...] = (
    {"boundary": "turn/started", "n": 1},
    {"boundary": "request/logged", "n": 1},
    {"boundary": "flush/written", "n": 1},
    {"fact": "write", "file": "session.jsonl"},
    {"boundary": "tool/logged", "n": 1, "callId": "c1"},
    {"boundary": "tool/logged", "n": 2, "callId": "c2", "parentCallId": "c1"},
    {"boundary": "turn/durable", "n": 1},
)


def reference(trace: tuple[dict[str, Any], ...] = TRACE) -> Reference:
    return Reference(
        scenario=load_scenario(SCENARIO_PATH), scenario_path=SCENARIO_PATH, trace=trace,
        log=LogView("-", False, None, (), 0, 0, 0, ()), ledger=(), returncode=0,
        log_bytes=b"", stderr="",
    )  # fmt: skip


def parse_acp_faults(names: list[str]) -> tuple[str, ...]:
    return parse_fault_names(names, ACP_FAULTS, drive="acp")


def plan_acp_cases(ref: Reference, names: list[str]) -> list[Case]:
    """The cases of the faults `names` the drive's table plans without running
    the target (double-sigkill, which does, is planned with the drive's options)."""
    single = [name for name in names if not ACP_FAULTS[name].by_running]
    return plan_faults(ACP_FAULTS, ref, single, Planning())


def test_all_is_the_three_acp_faults_in_their_order_then_double_sigkill() -> None:
    assert tuple(ACP_FAULTS) == ("sigkill", "sigterm", "acp-cancel", "double-sigkill")
    assert all_names(ACP_FAULTS) == tuple(ACP_FAULTS)
    assert parse_acp_faults(["all"]) == all_names(ACP_FAULTS)
    assert parse_acp_faults(["acp-cancel", "sigkill", "acp-cancel"]) == ("sigkill", "acp-cancel")


def test_double_sigkill_is_accepted_and_comes_last() -> None:
    assert parse_acp_faults(["double-sigkill", "sigterm"]) == ("sigterm", "double-sigkill")
    # `all,double-sigkill` (what `all` meant before issue 30) is `all`.
    assert parse_acp_faults(["all", "double-sigkill"]) == all_names(ACP_FAULTS)
    assert all_names(ACP_FAULTS)[-1] == "double-sigkill"
    assert ACP_FAULTS["double-sigkill"].by_running and ACP_FAULTS["double-sigkill"].in_all


@pytest.mark.parametrize("fault", ["power-loss", "io-error-write", "sigkill-agent", "ALL"])
def test_a_fault_the_acp_drive_cannot_inject_is_refused_with_the_supported_ones(
    fault: str,
) -> None:
    with pytest.raises(LabUsageError) as caught:
        parse_acp_faults(["sigkill", fault])
    message = str(caught.value)
    assert f"unknown fault {fault!r} for the acp drive" in message
    assert "sigkill, sigterm, acp-cancel, double-sigkill" in message


def test_the_faults_differ_by_the_act_bound_into_their_entries() -> None:
    # A kill leaves the log a prefix of the reference's; a stop and a cancel
    # let the agent run on, and only a stop must close the turn (G10).
    assert (KILL.ran_on, KILL.graceful) == (False, False)
    assert (STOP.ran_on, STOP.graceful) == (True, True)
    assert (CANCEL.ran_on, CANCEL.graceful) == (True, False)
    assert ACP_FAULTS["sigterm"].where == ACP_FAULTS["acp-cancel"].where
    assert ACP_FAULTS["sigkill"].where is None


def test_sigkill_is_planned_at_every_occurrence_in_trace_order() -> None:
    cases = plan_acp_cases(reference(), ["sigkill"])
    assert [c.occurrence for c in cases] == [
        "turn/started#1", "request/logged#1", "flush/written#1", "tool/logged#1",
        "tool/logged#2", "turn/durable#1",
    ]  # fmt: skip
    assert {(c.scenario, c.fault) for c in cases} == {(SCENARIO_PATH, "sigkill")}


@pytest.mark.parametrize("fault", ["sigterm", "acp-cancel"])
def test_a_graceful_stop_is_planned_where_sigterm_applies_only(fault: str) -> None:
    # Not at a flush (no graceful stop is injected there) and not at a nested
    # call's boundary (it has no checkpoint of its own).
    cases = plan_acp_cases(reference(), [fault])
    assert cases == [
        Case(SCENARIO_PATH, occurrence, fault)
        for occurrence in ("turn/started#1", "request/logged#1", "tool/logged#1", "turn/durable#1")
    ]


def test_cases_come_fault_by_fault_in_table_order() -> None:
    cases = plan_acp_cases(reference(), ["acp-cancel", "sigkill"])
    faults = [c.fault for c in cases]
    assert faults == ["sigkill"] * 6 + ["acp-cancel"] * 4


def test_double_sigkill_is_planned_with_the_drive_options_only() -> None:
    with pytest.raises(LabUsageError, match="double-sigkill cases are planned with the drive"):
        plan_faults(ACP_FAULTS, reference(), ["double-sigkill"], Planning())


def test_a_trace_without_boundaries_plans_nothing() -> None:
    assert plan_acp_cases(reference(({"fact": "write"},)), list(all_names(ACP_FAULTS))) == []


def test_the_default_agent_is_the_reference_acp_runtime_in_this_interpreter() -> None:
    assert acp_target(None) == (sys.executable, "-m", "faultlab.runtime.acp")


def test_a_target_command_is_split_like_a_shell_would() -> None:
    assert acp_target("my-agent --acp 'two words'") == ("my-agent", "--acp", "two words")
    assert acp_target(["a", "b c"]) == ("a", "b c")


@pytest.mark.parametrize(("command", "problem"), [
    ("", "--target: empty command"),
    ("   ", "--target: empty command"),
    ("agent 'unclosed", "--target \"agent 'unclosed\": No closing quotation"),
])  # fmt: skip
def test_a_bad_target_command_is_a_usage_error(command: str, problem: str) -> None:
    with pytest.raises(LabUsageError, match="^" + problem.replace("(", r"\(")):
        acp_target(command)


def test_options_refuse_an_unknown_spawn(tmp_path: Path) -> None:
    with pytest.raises(LabUsageError, match="spawn must be 'fork' or 'exec', not 'thread'"):
        AcpOptions(("agent",), tmp_path, spawn="thread")


def test_the_agent_command_line_carries_the_scenario_sessions_and_policy(tmp_path: Path) -> None:
    plain = AcpOptions(("agent", "--acp"), tmp_path)
    assert plain.argv("s.toml", tmp_path / "sessions") == [
        "agent", "--acp", "s.toml", "--sessions-dir", str(tmp_path / "sessions"),
    ]  # fmt: skip
    policed = AcpOptions(("agent",), tmp_path, policy="turn-only")
    assert policed.argv("s.toml", tmp_path)[-2:] == ["--policy", "turn-only"]


def test_an_exec_spawned_reference_child_runs_in_its_case_dir(tmp_path: Path) -> None:
    options = AcpOptions(("agent",), tmp_path, spawn="exec")
    child = options.child("s.toml", tmp_path / "sessions", tmp_path / "case", "crash",
                          armed="tool/logged#1")  # fmt: skip
    assert list(child.argv) == ["agent", "s.toml", "--sessions-dir", str(tmp_path / "sessions")]
    assert child.stderr_path == tmp_path / "case" / "crash.stderr"
    assert (child.armed, child.cwd, child.server) == ("tool/logged#1", str(tmp_path / "case"), None)
    assert child.trace == [] and child.messages == []  # built, not started


def test_a_user_target_runs_in_the_users_cwd_and_is_never_forked(tmp_path: Path) -> None:
    # reference=False: the command as typed, in the cwd it was typed in, and
    # spawn "fork" (the default) does not apply to it.
    options = AcpOptions(("their-agent",), tmp_path, reference=False)
    assert options.cwd(tmp_path) is None
    child = options.child("s.toml", tmp_path, tmp_path, "agent")
    assert (child.cwd, child.server, child.armed) == (None, None, None)


def test_the_session_files_are_the_log_and_ledger_in_the_sessions_folder(tmp_path: Path) -> None:
    log, ledger = session_files(tmp_path, "sess-1")
    assert log == tmp_path / "sess-1" / "session.jsonl"
    assert ledger == tmp_path / "sess-1" / "world-ledger.jsonl"


@pytest.mark.parametrize(("result", "expected"), [
    (SimpleNamespace(field_meta={"faultlab": {"nextPrompt": "and now?"}}), "and now?"),
    (SimpleNamespace(field_meta={"faultlab": {"nextPrompt": 3}}), None),
    (SimpleNamespace(field_meta={"faultlab": {}}), None),
    (SimpleNamespace(field_meta={"other": {"nextPrompt": "x"}}), None),
    (SimpleNamespace(field_meta=None), None),
    (SimpleNamespace(), None),
])  # fmt: skip
def test_the_next_prompt_is_read_from_the_faultlab_meta_only(
    result: Any, expected: str | None
) -> None:
    assert meta_next(result) == expected


CASE = Case(SCENARIO_PATH, "tool/logged#1", "sigkill")


def test_run_driven_keeps_the_sessions_verdict_violations_and_artifacts() -> None:
    async def work() -> Outcome:
        await asyncio.sleep(0)
        return "fail", [Violation("TOOL_INTENT_LOST", "lost")], {"dir": "/x"}

    result = run_driven(CASE, work())
    assert (result.case, result.verdict, result.codes) == (CASE, "fail", ("TOOL_INTENT_LOST",))
    assert result.artifacts == {"dir": "/x"}
    assert result.seconds >= 0


def test_a_hung_session_is_the_verdict_hung() -> None:
    async def work() -> Outcome:
        raise ChildHung("no answer within 1s")

    result = run_driven(CASE, work())
    assert (result.verdict, result.codes) == ("hung", ("CHILD_HUNG",))
    assert result.violations[0].message == "no answer within 1s"


@pytest.mark.parametrize("error", [
    ConnectionResetError("gone"), acp.RequestError.method_not_found("session/load"),
])  # fmt: skip
def test_a_session_that_failed_before_its_kill_point_drifted(error: Exception) -> None:
    async def work() -> Outcome:
        raise error

    result = run_driven(CASE, work())
    assert (result.verdict, result.codes) == ("drift", ("DRIFT",))
    message = result.violations[0].message
    assert message.startswith("the armed ACP session failed before its kill point: ")
    assert type(error).__name__ in message


def test_any_other_error_is_not_a_verdict() -> None:
    async def work() -> Outcome:
        raise ValueError("a bug in the lab")

    with pytest.raises(ValueError, match="a bug in the lab"):
        run_driven(CASE, work())
