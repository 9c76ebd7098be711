# The black-box drive's in-process logic (faultlab/lab/blackbox/drive.py, its
# fault table faultlab/lab/blackbox/faults.py): what `BlackboxOptions`
# refuses, the cases planned from the gate's records of a fault-free run
# (every occurrence x delay x repeat, per fault, in that order, each case id
# a kill point that parses back to itself), what tells its faults apart, and the
# helpers that read a case's records: the final answer of one agent run,
# the reference run's status, the records file and a stderr tail.  No agent,
# server or process is started (the agent is the bundled `reference`
# adapter, loaded from its file).
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from faultlab.lab.agents.launch import agent_launcher
from faultlab.lab.blackbox import drive
from faultlab.lab.blackbox.drive import AgentKill, BlackboxOptions
from faultlab.lab.blackbox.faults import BLACKBOX_FAULTS, plan_blackbox_cases
from faultlab.lab.errors import LabUsageError
from faultlab.lab.process.reference import Reference
from faultlab.lab.read.view import LogView
from faultlab.lab.servers.points import DEFAULT_DELAYS_MS, parse_kill_point
from faultlab.scenario import load_scenario

SCENARIO_PATH = str(Path(__file__).resolve().parents[4] / "scenarios" / "payment.toml")
AGENT = agent_launcher("reference")

# The gate's records of a fault-free run: boundaries (with `n`) and facts.
RECORDS: tuple[dict[str, Any], ...] = (
    {"fact": "agent/start", "kind": "first", "turn": 0, "run": 1},
    {"boundary": "model/request", "n": 1},
    {"boundary": "tool/received", "n": 1},
    {"boundary": "tool/applied", "n": 1},
    {"fact": "model/response", "request": 1, "text": "", "calls": [{"id": "t1"}]},
    {"boundary": "model/request", "n": 2},
)


def options(tmp_path: Path, **fields: Any) -> BlackboxOptions:
    return BlackboxOptions(AGENT, tmp_path, **fields)


def reference(trace: tuple[dict[str, Any], ...] = RECORDS) -> Reference:
    return Reference(
        scenario=load_scenario(SCENARIO_PATH), scenario_path=SCENARIO_PATH, trace=trace,
        log=LogView("-", False, None, (), 0, 0, 0, ()), ledger=(), returncode=0,
        log_bytes=b"", stderr="", ground_truth="servers",
    )  # fmt: skip


def test_the_defaults_are_the_documented_delays_once_each(tmp_path: Path) -> None:
    made = options(tmp_path)
    assert (made.delays_ms, made.repeats, made.timeout) == (DEFAULT_DELAYS_MS, 1, 120.0)
    assert DEFAULT_DELAYS_MS == (0, 50, 200, 1000)


@pytest.mark.parametrize(("fields", "problem"), [
    ({"timeout": 0}, "timeout must be a number of seconds from 0.1 to 86400, not 0"),
    ({"timeout": -1.5}, "timeout must be a number of seconds from 0.1 to 86400, not -1.5"),
    ({"repeats": 0}, "repeats must be at least 1, not 0"),
    ({"delays_ms": (0, 60_001)}, "model/request#1: delay must be 0 to 60000 ms, not 60001"),
    ({"delays_ms": (-1,)}, "model/request#1: delay must be 0 to 60000 ms, not -1"),
])  # fmt: skip
def test_options_refuse_what_no_case_could_run(
    tmp_path: Path, fields: dict[str, Any], problem: str
) -> None:
    with pytest.raises(LabUsageError) as caught:
        options(tmp_path, **fields)
    assert str(caught.value) == problem


def test_every_occurrence_is_planned_at_every_delay(tmp_path: Path) -> None:
    cases = plan_blackbox_cases(reference(), options(tmp_path, delays_ms=(0, 200, 1000)))
    assert [c.occurrence for c in cases] == [
        "model/request#1@0ms", "model/request#1@200ms", "model/request#1@1s",
        "tool/received#1@0ms", "tool/received#1@200ms", "tool/received#1@1s",
        "tool/applied#1@0ms", "tool/applied#1@200ms", "tool/applied#1@1s",
        "model/request#2@0ms", "model/request#2@200ms", "model/request#2@1s",
    ]  # fmt: skip
    assert {(c.scenario, c.fault) for c in cases} == {(SCENARIO_PATH, "sigkill")}
    assert cases[0].id == "payment.toml::model/request#1@0ms[sigkill]"


def test_repeats_get_a_numbered_suffix_only_when_there_are_several(tmp_path: Path) -> None:
    cases = plan_blackbox_cases(reference(), options(tmp_path, delays_ms=(50,), repeats=3))
    assert [c.occurrence for c in cases[:4]] == [
        "model/request#1@50ms~1", "model/request#1@50ms~2", "model/request#1@50ms~3",
        "tool/received#1@50ms~1",
    ]  # fmt: skip
    assert len(cases) == 4 * 3
    once = plan_blackbox_cases(reference(), options(tmp_path, delays_ms=(50,)))
    assert all("~" not in c.occurrence for c in once)


def test_each_fault_gets_its_own_cases_in_the_order_asked(tmp_path: Path) -> None:
    cases = plan_blackbox_cases(reference(), options(tmp_path, delays_ms=(0,)),
                                ["sigkill-agent", "sigkill"])  # fmt: skip
    assert [c.fault for c in cases] == ["sigkill-agent"] * 4 + ["sigkill"] * 4
    assert plan_blackbox_cases(reference(), options(tmp_path), []) == []


def test_a_planned_case_names_a_kill_point_that_parses_back(tmp_path: Path) -> None:
    # run_blackbox_case reads its kill point back from the case id's occurrence.
    cases = plan_blackbox_cases(reference(), options(tmp_path, delays_ms=DEFAULT_DELAYS_MS,
                                                     repeats=2))  # fmt: skip
    for case in cases:
        text = case.occurrence.partition("~")[0]
        point = parse_kill_point(text)
        assert str(point) == text
    delays = {parse_kill_point(c.occurrence.partition("~")[0]).delay_ms for c in cases}
    assert delays == set(DEFAULT_DELAYS_MS)


def test_a_fault_no_agent_case_can_inject_is_refused(tmp_path: Path) -> None:
    assert tuple(BLACKBOX_FAULTS) == ("sigkill", "sigkill-agent")
    with pytest.raises(LabUsageError) as caught:
        plan_blackbox_cases(reference(), options(tmp_path), ["sigkill", "sigterm"])
    assert str(caught.value) == ("unknown fault 'sigterm' for the agent drive "
                                 "(its faults: sigkill, sigkill-agent)")  # fmt: skip


class _Process:
    """Stands in for a ContainedProcess (the kill itself is the integration
    tests' business): records which kill an `AgentKill` chose."""

    def __init__(self) -> None:
        self.killed: list[str] = []

    def kill_tree(self) -> None:
        self.killed.append("tree")

    def kill_agent(self) -> None:
        self.killed.append("agent")


def test_the_agent_faults_differ_by_what_their_kill_spares() -> None:
    # sigkill: the whole tree; sigkill-agent: the agent's group only, the
    # rest let finish (the rig releases the gate with survivors_proceed).
    for spares, expected in ((False, ["tree"]), (True, ["agent"])):
        process = _Process()
        AgentKill(spares_others=spares).apply(process)  # type: ignore[arg-type]
        assert process.killed == expected
    assert all(f.in_all and f.where is None for f in BLACKBOX_FAULTS.values())


def test_a_run_that_reached_nothing_plans_nothing(tmp_path: Path) -> None:
    facts_only = ({"fact": "agent/start", "run": 1}, {"fact": "agent/exit", "run": 1})
    assert plan_blackbox_cases(reference(facts_only), options(tmp_path)) == []


def test_the_answer_of_a_run_is_its_last_final_model_response() -> None:
    # What the oracle is given as the answers of the turns that completed:
    # per agent run, the last response that made no tool call.
    records = [
        {"fact": "agent/start", "run": 1},
        {"fact": "model/response", "text": "calling", "calls": [{"id": "t1"}]},
        {"fact": "model/response", "text": "Refunded.", "calls": []},
        {"fact": "agent/start", "run": 2},
        {"fact": "model/response", "text": "first", "calls": []},
        {"boundary": "model/request", "n": 3},
        {"fact": "model/response", "text": "second"},
        {"fact": "agent/start", "run": 3},
        {"fact": "model/response", "text": "only calls", "calls": [{"id": "t2"}]},
    ]
    assert drive._answer(records, 1) == "Refunded."
    assert drive._answer(records, 2) == "second"
    assert drive._answer(records, 3) == ""
    assert drive._answer(records, 4) == ""


def test_the_reference_status_is_the_first_failed_run_or_a_hang() -> None:
    failed = drive._Run("first", 0, status=3)
    assert drive._returncode(None, drive._Outcome([])) == 0
    assert drive._returncode(failed, drive._Outcome([])) == 3
    assert drive._returncode(drive._Run("resume", 1, status=None), drive._Outcome([])) == 1
    assert drive._returncode(None, drive._Outcome([], hung="run1-first hung")) == -9
