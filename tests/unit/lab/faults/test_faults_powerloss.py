# The power-loss and torn-write cases on synthetic traces and log bytes
# (faultlab/lab/faults/powerloss.py): the offline check of G1, G2, G4, G5 and
# G7 on each derived state, the world ledger at the crash point, planning, and
# FAULT_UNSUPPORTED.  No process is started.
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from power_runs import Run

from faultlab.lab.faults.powerloss import (
    _ledger_at,
    check_state,
    plan_power_cases,
    run_power_case,
)
from faultlab.lab.faults.powerstates import derive_states, unsupported
from faultlab.lab.oracle.case import Case
from faultlab.lab.oracle.codes import GUARANTEES
from faultlab.lab.process.reference import LabOptions
from faultlab.lab.process.target import reference_target

# -- the offline check -------------------------------------------------------------


def test_every_state_of_a_durable_target_passes() -> None:
    run = Run()
    run.turn()
    ref = run.reference()
    for k in (1, 2, 3):
        for torn in (False, True):  # power-loss, torn-write
            for state in derive_states(ref, f"flush/written#{k}", torn=torn):
                assert check_state(state, ref) == [], state.label


def test_flushes_claimed_ok_but_never_fsynced_are_lost_work() -> None:
    run = Run(fsync=False)
    run.turn()
    ref = run.reference()
    (state,) = derive_states(ref, "flush/written#3", torn=False)
    found = check_state(state, ref)
    codes = [v.code for v in found]
    assert codes == ["REQUEST_ENVELOPE_LOST", "TOOL_INTENT_LOST", "SETTLED_STEP_LOST"]
    assert all(v.evidence["state"] == "synced" and v.message.startswith("[synced] ") for v in found)
    lost = found[-1].evidence
    assert (lost["flushedThrough"], lost["lastSeq"]) == (5, -1)


def test_a_lost_turn_end_is_a_completed_turn_lost() -> None:
    run = Run(fsync=False)
    run.turn()
    run.flush(run.event("turn/start", turn=1))
    ref = run.reference()
    (state,) = derive_states(ref, "flush/written#4", torn=False)
    assert "COMPLETED_TURN_LOST" in {v.code for v in check_state(state, ref)}


def test_a_torn_state_of_a_non_fsyncing_target_fails_with_its_label() -> None:
    run = Run(fsync=False)
    run.turn()
    ref = run.reference()
    states = derive_states(ref, "flush/written#2", torn=True)
    first = check_state(states[0], ref)
    assert {v.code for v in first} == {"REQUEST_ENVELOPE_LOST", "SETTLED_STEP_LOST"}
    assert all(v.evidence["state"] == states[0].label for v in first)


def test_g7_is_checked_on_the_expected_repair_of_the_state() -> None:
    run = Run()
    run.flush(
        run.event("turn/start", turn=0),
        run.event("tool/result", turn=0, step=0, callId="nobody-asked", content="x", isError=False),
    )
    run.flush(run.event("step/start", turn=0, step=0))
    ref = run.reference()
    (state,) = derive_states(ref, "flush/written#2", torn=False)
    (violation,) = check_state(state, ref)
    assert violation.code == "PROVIDER_INVALID_HISTORY"
    assert violation.evidence["log"] == "expected-repair"


def test_a_state_that_is_not_a_prefix_of_the_reference_is_reported() -> None:
    run = Run()
    run.turn()
    ref = run.reference()
    (state,) = derive_states(ref, "flush/written#3", torn=False)
    other = Run()
    other.flush(other.event("turn/start", turn=7))
    shifted = replace(ref, log=other.reference().log)
    assert "LOG_NOT_PREFIX" in {v.code for v in check_state(state, shifted)}


# -- the world ledger, planning, unsupported targets ---------------------------------


def test_the_world_keeps_the_effects_applied_before_the_crash_point() -> None:
    run = Run()
    run.turn()
    ledger = ({"callId": "c0", "tool": "charge", "arguments": {}, "key": None},)
    ref = run.reference(ledger)
    (before,) = derive_states(ref, "flush/written#2", torn=False)
    (after,) = derive_states(ref, "flush/written#3", torn=False)
    assert _ledger_at(ref, before.trace) == []
    assert _ledger_at(ref, after.trace) == list(ledger)


def test_one_case_per_flush_written_occurrence() -> None:
    run = Run()
    run.turn()
    cases = plan_power_cases(run.reference(), "torn-write")
    assert [c.occurrence for c in cases] == [f"flush/written#{k}" for k in (1, 2, 3)]
    assert {c.fault for c in cases} == {"torn-write"}
    assert cases[0].id == "t.toml::flush/written#1[torn-write]"


def test_a_target_without_write_facts_gets_one_unsupported_case(tmp_path: Path) -> None:
    run = Run()
    run.turn()
    run.trace = [m for m in run.trace if m.get("fact") not in ("write", "fsync")]
    ref = run.reference()
    assert unsupported(ref.trace) is not None
    (case,) = plan_power_cases(ref, "power-loss")
    result = run_power_case(case, ref, LabOptions(reference_target(), tmp_path), torn=False)
    assert result.verdict == "error" and result.codes == ("FAULT_UNSUPPORTED",)
    assert "no write facts" in result.violations[0].message
    assert GUARANTEES["FAULT_UNSUPPORTED"][0] == "lab"
    assert not (tmp_path / "cases").exists()  # no process was started


def test_a_target_that_never_reaches_flush_written_is_unsupported(tmp_path: Path) -> None:
    run = Run()
    run.turn()
    run.trace = [m for m in run.trace if m.get("boundary") != "flush/written"]
    ref = run.reference()
    (case,) = plan_power_cases(ref, "torn-write")
    result = run_power_case(case, ref, LabOptions(reference_target(), tmp_path), torn=True)
    assert result.verdict == "error" and result.codes == ("FAULT_UNSUPPORTED",)
    assert "never reaches flush/written" in result.violations[0].message


def test_an_occurrence_the_reference_never_reached_drifts(tmp_path: Path) -> None:
    run = Run()
    run.turn()
    ref = run.reference()
    case = Case(ref.scenario_path, "flush/written#9", "power-loss")
    result = run_power_case(case, ref, LabOptions(reference_target(), tmp_path), torn=False)
    assert result.verdict == "drift" and result.codes == ("DRIFT",)
