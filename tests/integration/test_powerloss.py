# power-loss and torn-write with real processes: the reference runtime passes
# every case; a backend that never fsyncs fails under power-loss (and passes
# SIGKILL, which cannot see it); a backend that writes a batch line by line is
# invisible to torn-write (only io-error catches it, tests/integration/
# test_faults.py); and the offline derivation agrees with real files: a real
# child killed at flush/written#k, its log truncated for real to the state's
# size and recovered by real children, gives the offline verdict.
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from faultlab import lab
from faultlab.lab.faults.fault import Planning
from faultlab.lab.faults.powerloss import (
    OFFLINE_CODES,
    _ledger_at,
    check_state,
    offline_rate,
    plan_power_cases,
    run_power_case,
)
from faultlab.lab.faults.powerstates import derive_states, states_at
from faultlab.lab.faults.table import classic_fault
from faultlab.lab.oracle.case import Case
from faultlab.lab.oracle.checks import Observation, check_case, event_key
from faultlab.lab.process.reference import (
    LabOptions,
    Reference,
    make_child,
    read_ledger,
    run_to_exit,
)
from faultlab.lab.process.target import session_files
from faultlab.lab.read.jsonl import parse_log
from faultlab.lab.read.view import LogView

ROOT = Path(__file__).resolve().parents[2]
PAYMENT = str(ROOT / "scenarios" / "payment.toml")
MULTI_TURN = str(ROOT / "scenarios" / "multi-turn.toml")
TINY_TOOL = str(ROOT / "tests" / "scenarios" / "tiny-tool.toml")
pytestmark = pytest.mark.realprocess

# What the offline check and a real recovery both decide (G1, G2, G4, G5):
# the offline codes but G7, which offline is judged on the lab's own repair.
DURABLE_CODES = OFFLINE_CODES - {"PROVIDER_INVALID_HISTORY"}


def variant(name: str) -> list[str]:
    return [sys.executable, str(ROOT / "tests" / "variants" / f"{name}.py")]


def setup(
    scenario: str, workdir: Path, target: list[str] | None = None
) -> tuple[Reference, LabOptions]:
    reference = lab.reference_run(scenario, target=target, workdir=workdir)
    assert reference.returncode == 0, reference.stderr
    return reference, LabOptions(lab.make_target(target=target), workdir)


@pytest.mark.parametrize("scenario", [TINY_TOOL, PAYMENT], ids=["tiny-tool", "payment"])
def test_the_reference_runtime_passes_every_power_loss_and_torn_write_case(
    tmp_path: Path, scenario: str
) -> None:
    reference, options = setup(scenario, tmp_path)
    power = [classic_fault(name) for name in ("power-loss", "torn-write")]
    results = [  # through the classic drive's fault table
        fault.run(case, reference, options)
        for fault in power
        for case in fault.plan(reference, Planning(options))
    ]
    written = [o for o in reference.occurrences if o.startswith("flush/written#")]
    assert len(results) == 2 * len(written) >= 10
    assert [(r.case.id, [v.message for v in r.violations]) for r in results if not r.passed] == []
    torn = [r for r in results if r.case.fault == "torn-write"]
    assert all("mid-line" in r.detail for r in torn)  # a torn tail was recovered for real


def test_a_backend_that_never_fsyncs_fails_power_loss_and_passes_sigkill(tmp_path: Path) -> None:
    reference, options = setup(PAYMENT, tmp_path, variant("never_fsyncs"))
    assert not any(m.get("fact") == "fsync" for m in reference.trace)
    case = Case(reference.scenario_path, "flush/written#3", "power-loss")
    result = run_power_case(case, reference, options, torn=False)
    assert result.verdict == "fail"
    assert {"SETTLED_STEP_LOST", "REQUEST_ENVELOPE_LOST", "TOOL_INTENT_LOST"} <= set(result.codes)
    # The resumed model charges again: the real recovery's G6 on top.
    assert "SIDE_EFFECT_DUPLICATED" in result.codes
    assert "no fsync" in result.detail
    torn = run_power_case(
        Case(reference.scenario_path, "flush/written#3", "torn-write"), reference, options,
        torn=True,
    )
    assert "SETTLED_STEP_LOST" in torn.codes
    # SIGKILL keeps the page cache: the same kill point passes.
    sigkill = lab.run_single(
        PAYMENT, "flush/written#3", target=variant("never_fsyncs"), workdir=tmp_path / "k"
    )
    assert sigkill.verdict == "pass", [v.message for v in sigkill.violations]


def test_a_backend_that_never_fsyncs_loses_a_completed_turn(tmp_path: Path) -> None:
    reference, options = setup(MULTI_TURN, tmp_path, variant("never_fsyncs"))
    last = [o for o in reference.occurrences if o.startswith("flush/written#")][-1]
    case = Case(reference.scenario_path, last, "power-loss")
    result = run_power_case(case, reference, options, torn=False)
    assert "COMPLETED_TURN_LOST" in result.codes


def test_a_batch_written_line_by_line_is_invisible_to_torn_write(tmp_path: Path) -> None:
    # Every state a kill between its writes (or a power loss) can leave is a
    # prefix of the log cut at a line, which torn-write already covers; the
    # bug shows only when a write fails (io-error: SEQ_DUPLICATE).
    reference, options = setup(PAYMENT, tmp_path, variant("torn_batch_no_truncate"))
    writes = [m for m in reference.trace if m.get("fact") == "write"]
    assert len(writes) > len(plan_power_cases(reference, "torn-write"))  # one per line
    results = [
        run_power_case(case, reference, options, torn=True)
        for case in plan_power_cases(reference, "torn-write")
    ]
    assert [r.codes for r in results if not r.passed] == []


def _real_power_loss(
    reference: Reference, options: LabOptions, occurrence: str, where: Path
) -> tuple[LogView, list[str], list[dict[str, object]]]:
    """Kill a real child at `occurrence`, truncate its log for real to the
    power-loss state its own trace gives, recover it with real children:
    (the cut log, the oracle's codes, the world ledger after the kill)."""
    session = where / "session"
    log_path, ledger_path = session_files(session)
    crash = make_child(options, reference.scenario_path, session, "run", "crash", armed=occurrence)
    with crash:
        assert crash.run_until_parked_or_exit(60) is not None
        crash.kill()
        crash.wait(30)
    (state,) = states_at(crash.trace, log_path.read_bytes(), torn=False)
    assert state.log is not None
    os.truncate(log_path, len(state.log))  # the power loss, for real
    crashed = parse_log(log_path.read_bytes(), str(log_path))
    ledger = list(read_ledger(ledger_path))
    repair = run_to_exit(make_child(options, reference.scenario_path, session, "repair", "r"), 60)
    repaired = parse_log(log_path.read_bytes(), str(log_path))
    resume = run_to_exit(make_child(options, reference.scenario_path, session, "resume", "s"), 60)
    observation = Observation(
        scenario=reference.scenario,
        case=Case(reference.scenario_path, occurrence, "power-loss"),
        reference_log=reference.log,
        reference_ledger=reference.ledger,
        trace=tuple(crash.trace),
        crashed=crashed,
        repaired=repaired,
        repair_status=repair,
        final=parse_log(log_path.read_bytes(), str(log_path)),
        resume_status=resume,
        final_ledger=read_ledger(ledger_path),
    )
    return crashed, [v.code for v in check_case(observation)], ledger


@pytest.mark.parametrize("name", [None, "never_fsyncs"], ids=["reference", "never_fsyncs"])
def test_the_offline_derivation_agrees_with_real_files(tmp_path: Path, name: str | None) -> None:
    reference, options = setup(PAYMENT, tmp_path, variant(name) if name else None)
    written = [o for o in reference.occurrences if o.startswith("flush/written#")]
    sample = written[1::2] if name else written  # every state of the reference, half of the other
    verdicts = []
    for occurrence in sample:
        (state,) = derive_states(reference, occurrence, torn=False)
        offline = {v.code for v in check_state(state, reference)} & DURABLE_CODES
        crashed, codes, ledger = _real_power_loss(
            reference, options, occurrence, tmp_path / occurrence.replace("/", "_")
        )
        # The same events survive (timestamps aside), and the same world.
        survived = [event_key(e) for e in state.view("").events]
        assert [event_key(e) for e in crashed.events] == survived
        assert ledger == _ledger_at(reference, state.trace)
        assert set(codes) & DURABLE_CODES == offline, (occurrence, codes)
        verdicts.append(bool(offline))
    assert any(verdicts) if name else not any(verdicts)


def test_offline_states_are_checked_much_faster_than_real_cases(tmp_path: Path) -> None:
    rate = offline_rate(quick=True, workdir=tmp_path)
    assert rate["offlineStates"] > 0 and rate["realCases"] > 0
    assert rate["ratio"] == pytest.approx(
        rate["offlineStatesPerSecond"] / rate["realCasesPerSecond"], rel=0.05
    )
    assert rate["ratio"] > 10  # the acceptance bar (100x) is measured by `faultlab bench`
