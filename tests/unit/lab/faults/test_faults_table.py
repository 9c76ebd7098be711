# Faults as a table (faultlab/lab/faults/fault.py and each drive's table:
# faults/table.py, acp/faults.py, blackbox/faults.py, apps/faults.py): the
# one parser of the fault names a user gives, planning in table order, a new
# fault as one entry and nothing else, and every drive's table as the drive
# and the registry show it.  No process is started.
from __future__ import annotations

from pathlib import Path

import pytest

from faultlab.lab.drives import drive_faults, drives_running
from faultlab.lab.errors import LabUsageError
from faultlab.lab.faults.fault import (
    Fault,
    Planning,
    all_names,
    every_occurrence,
    fault_named,
    fault_table,
    parse_fault_names,
    plan_faults,
)
from faultlab.lab.oracle.case import Case, CaseResult
from faultlab.lab.process.reference import Reference
from faultlab.lab.read.view import LogView
from faultlab.lab.servers.points import APP_BOUNDARIES
from faultlab.probe import BOUNDARIES as PROBE_BOUNDARIES
from faultlab.probe import FAULTS
from faultlab.scenario import load_scenario

PAYMENT = str(Path(__file__).resolve().parents[4] / "scenarios" / "payment.toml")
TRACE = ({"boundary": "turn/started", "n": 1}, {"boundary": "tool/logged", "n": 1},
         {"boundary": "tool/logged", "n": 2, "parentCallId": "c1"},
         {"boundary": "turn/durable", "n": 1})  # fmt: skip


def reference() -> Reference:
    return Reference(
        scenario=load_scenario(PAYMENT), scenario_path=PAYMENT, trace=TRACE,
        log=LogView("-", False, None, (), 0, 0, 0, ()), ledger=(), returncode=0,
        log_bytes=b"", stderr="",
    )  # fmt: skip


# A drive's options and a runner of its own, for a table made here: a real
# runner that says what it was given (no process: the table is what is tested).
def _runner(case: Case, _reference: Reference, options: str) -> CaseResult:
    return CaseResult(case, "pass", (), 0.0, f"ran with {options}")


def _at_turns(fault: Fault[str], ref: Reference, planning: Planning[str]) -> list[Case]:
    return [Case(ref.scenario_path, o, fault.name) for o in ref.occurrences
            if fault.where is None or o.partition("#")[0] in fault.where]  # fmt: skip


def _by_running(fault: Fault[str], ref: Reference, planning: Planning[str]) -> list[Case]:
    return [Case(ref.scenario_path, f"turn/started#1+{planning.needs_options(fault.name)}",
                 fault.name)]  # fmt: skip


TABLE = fault_table((
    Fault("kill", "everywhere", every_occurrence, _runner),
    Fault("later", "planned by running", _by_running, _runner, in_all=False, by_running=True),
    Fault("stop", "at turns only", _at_turns, _runner, where=("turn/started", "turn/durable")),
))  # fmt: skip


def test_all_is_the_in_all_faults_and_a_named_one_joins_them() -> None:
    assert all_names(TABLE) == ("kill", "stop")
    assert parse_fault_names(["all"], TABLE, drive="d") == ("kill", "stop")
    assert parse_fault_names(["later", " all ", ""], TABLE, drive="d") == ("kill", "later", "stop")


def test_names_come_back_in_table_order_or_as_given_each_once() -> None:
    names = ["stop", "kill", "stop"]
    assert parse_fault_names(names, TABLE, drive="d") == ("kill", "stop")
    assert parse_fault_names(names, TABLE, drive="d", as_given=True) == ("stop", "kill")


@pytest.mark.parametrize(("names", "message"), [
    (["kill", "frost"], "unknown fault 'frost' for the d drive (its faults: kill, later, stop)"),
    (["ALL"], "unknown fault 'ALL' for the d drive"),
    (["", " "], "--faults: name at least one fault, or 'all'"),
])  # fmt: skip
def test_a_bad_name_is_one_usage_error_naming_the_drive_and_its_faults(
    names: list[str], message: str
) -> None:
    with pytest.raises(LabUsageError) as caught:
        parse_fault_names(names, TABLE, drive="d")
    assert str(caught.value).startswith(message)
    with pytest.raises(LabUsageError, match="unknown fault 'frost' for the d drive"):
        fault_named(TABLE, "frost", drive="d")


def test_a_table_refuses_a_name_given_twice() -> None:
    with pytest.raises(ValueError, match="'kill' is in the table twice"):
        fault_table((TABLE["kill"], TABLE["kill"]))


def test_a_new_fault_is_one_entry_planned_and_run_through_the_table() -> None:
    # "stop" needs nothing but its entry: its where, its planner, its runner.
    planning = Planning("opts")
    cases = plan_faults(TABLE, reference(), ("stop", "later", "kill"), planning)
    assert [(c.occurrence, c.fault) for c in cases] == [
        ("turn/started#1", "kill"), ("tool/logged#1", "kill"), ("tool/logged#2", "kill"),
        ("turn/durable#1", "kill"), ("turn/started#1", "stop"), ("turn/durable#1", "stop"),
        ("turn/started#1+opts", "later"),  # planned by running: last
    ]  # fmt: skip
    case = cases[4]
    assert fault_named(TABLE, case.fault, drive="d").run(case, reference(), "o").detail == (
        "ran with o")
    TABLE["stop"].check_at("turn/started")
    with pytest.raises(LabUsageError, match="'stop' cannot be injected at tool/logged"):
        TABLE["stop"].check_at("tool/logged")
    with pytest.raises(LabUsageError, match="later cases are planned with the drive's options"):
        plan_faults(TABLE, reference(), ("later",), Planning())


def test_every_drive_dispatches_a_table_of_its_own() -> None:
    classic, acp, agent, app = (drive_faults(d) for d in ("classic", "acp", "agent", "app"))
    assert tuple(classic) == (*FAULTS, "double-sigkill")  # the report order
    assert all_names(classic) == tuple(classic)  # all means every fault (issue 30)
    assert tuple(acp) == ("sigkill", "sigterm", "acp-cancel", "double-sigkill") == all_names(acp)
    assert tuple(agent) == ("sigkill", "sigkill-agent") == all_names(agent)
    assert tuple(app) == ("sigkill", "io-error", "second-writer") == all_names(app)
    # double-sigkill is planned by running recoveries (so last), and in `all`.
    for table in (classic, acp):
        assert table["double-sigkill"].by_running and table["double-sigkill"].in_all
        assert [f.name for f in table.values() if f.by_running] == ["double-sigkill"]
    for table in (classic, acp, agent, app):
        assert all(f.summary for f in table.values())
    points = {*PROBE_BOUNDARIES}
    assert all(set(f.where or ()) <= points for t in (classic, acp) for f in t.values())
    assert set(app["io-error"].where or ()) <= set(APP_BOUNDARIES)
    assert set(app["second-writer"].where or ()) <= set(APP_BOUNDARIES)


def test_which_drives_run_a_fault_is_read_off_the_tables() -> None:
    assert drives_running("sigkill") == ("classic", "acp", "agent", "app")
    assert drives_running("double-sigkill") == ("classic", "acp")
    assert drives_running("torn-write") == ("classic",)
    assert drives_running("io-error") == ("classic", "app")
    assert drives_running("sigkill-agent") == ("agent",)
    assert drives_running("frost") == ()
    with pytest.raises(LabUsageError, match="unknown drive 'tcp'"):
        drive_faults("tcp")


def test_fuzz_and_the_library_read_fault_names_through_the_tables() -> None:
    from faultlab import lab
    from faultlab.lab.campaigns.fuzz import FuzzSettings

    # The library keeps the order given (fuzz draws shrink towards the first).
    assert lab.parse_faults("torn-write,sigkill,torn-write") == ("torn-write", "sigkill")
    assert lab.parse_faults("all,double-sigkill", drive="acp")[-1] == "double-sigkill"
    with pytest.raises(LabUsageError, match="unknown fault 'meteor' for the classic drive"):
        FuzzSettings(faults=("sigkill", "meteor"))
    with pytest.raises(LabUsageError, match="'double-sigkill' cannot be fuzzed"):
        FuzzSettings(faults=("double-sigkill",))
    # fuzz's `all` (the CLI's) is every fault it can draw: all but those
    # planned by running the target, which `explore`'s `all` has (issue 30).
    drawn = lab.parse_faults("all", by_running=False)
    assert drawn == FAULTS == FuzzSettings(faults=drawn).faults
    assert lab.parse_faults("all") == (*FAULTS, "double-sigkill")
    assert lab.parse_faults("all,double-sigkill", by_running=False)[-1] == "double-sigkill"
