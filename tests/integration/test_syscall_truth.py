# Ground truth from the system (issue 19, item 1) with real processes and a
# real strace: the reference run traced, its file facts from the system
# calls agreeing with what the reference runtime reports; the three zoo
# variants whose reported facts lie caught with their own codes (and passing
# under the target's own facts, which is why the trace is needed); a target
# that reports no file facts at all still getting power-loss and torn-write
# cases; and the fallback when tracing is off or strace is missing.
from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from faultlab import lab
from faultlab.lab.faults.fault import Planning
from faultlab.lab.faults.powerloss import plan_power_cases, run_power_case
from faultlab.lab.faults.powerstates import file_states, file_trace
from faultlab.lab.faults.systruth import reported_disagreements
from faultlab.lab.faults.table import classic_fault
from faultlab.lab.oracle.case import Case
from faultlab.lab.process import reference as reference_module
from faultlab.lab.process.reference import LabOptions, Reference, run_reference
from faultlab.scenario import load_scenario

ROOT = Path(__file__).resolve().parents[2]
CHAT = str(ROOT / "scenarios" / "chat.toml")
PAYMENT = str(ROOT / "scenarios" / "payment.toml")
pytestmark = [
    pytest.mark.realprocess,
    pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace (.ci/run installs it)"),
]


def variant(name: str) -> list[str]:
    return [sys.executable, str(ROOT / "tests" / "variants" / f"{name}.py")]


NO_FACTS = [sys.executable, str(ROOT / "tests" / "integration" / "targets" / "no_file_facts.py")]
MMAP = [sys.executable, str(ROOT / "tests" / "integration" / "targets" / "mmap_notes.py")]


def traced(
    scenario: str, workdir: Path, target: list[str] | None = None, truth: str = "syscalls"
) -> tuple[Reference, LabOptions]:
    options = LabOptions(lab.make_target(target=target), workdir, ground_truth=truth)
    reference = run_reference(scenario, load_scenario(scenario), options)
    assert reference.returncode == 0, reference.stderr
    return reference, options


def _log_states(trace: tuple[dict[str, object], ...], log: str) -> list[tuple[int, int, bool]]:
    """(written, synced, linked) of the log at every flush/written of `trace`."""
    found = []
    for index, message in enumerate(trace):
        if message.get("boundary") == "flush/written":
            state = file_states(trace[:index]).get(log)
            assert state is not None
            found.append((state.written, state.synced, state.linked))
    return found


@pytest.mark.parametrize("scenario", [CHAT, PAYMENT], ids=["chat", "payment"])
def test_the_system_calls_agree_with_what_the_reference_runtime_reports(
    tmp_path: Path, scenario: str
) -> None:
    reference, _ = traced(scenario, tmp_path)
    assert reference.ground_truth == "syscalls" and reference.ground_truth_note == ""
    kinds = {f["fact"] for f in reference.syscalls}
    # The atomic create (temp, fsync, link, unlink, dirsync), then appends and fsyncs.
    assert {"create", "write", "fsync", "link", "unlink", "dirsync"} <= kinds
    log = reference.log.path
    system = _log_states(file_trace(reference), log)
    reported = _log_states(reference.trace, log)
    assert len(system) == len(reported) >= 4
    assert system == reported
    assert reported_disagreements(reference) == []


@pytest.mark.parametrize(
    ("name", "code", "at"),
    [
        ("fsync_wrong_fd", "FSYNC_WRONG_FILE", "flush/written#2"),
        ("reports_unmade_fsync", "FSYNC_NOT_MADE", "flush/written#2"),
        ("temp_log_not_fsynced", "RENAME_BEFORE_FSYNC", "flush/written#1"),
        ("reports_unmade_dirsync", "DIRSYNC_NOT_MADE", "flush/written#2"),
        ("fsync_without_flush", "WRITE_NOT_MADE", "flush/written#2"),
    ],
)
def test_a_reported_fact_the_system_calls_contradict_is_a_violation(
    tmp_path: Path, name: str, code: str, at: str
) -> None:
    reference, options = traced(CHAT, tmp_path / "s", variant(name))
    assert code in {v.code for _, v in reported_disagreements(reference)}
    case = Case(reference.scenario_path, at, "power-loss")
    result = run_power_case(case, reference, options, torn=False)
    assert result.verdict == "fail"
    assert code in result.codes
    assert "ground truth: system calls" in result.detail
    # The target's own facts say nothing is wrong: that path cannot see it.
    facts, facts_options = traced(CHAT, tmp_path / "f", variant(name), truth="facts")
    assert facts.ground_truth == "facts" and "turned off" in facts.ground_truth_note
    blind = run_power_case(Case(facts.scenario_path, at, "power-loss"), facts, facts_options,
                           torn=False)  # fmt: skip
    assert code not in blind.codes
    if name != "temp_log_not_fsynced":
        assert blind.verdict == "pass", [v.message for v in blind.violations]


def test_a_fsync_on_the_wrong_descriptor_loses_settled_events_under_power_loss(
    tmp_path: Path,
) -> None:
    reference, options = traced(CHAT, tmp_path, variant("fsync_wrong_fd"))
    result = run_power_case(
        Case(reference.scenario_path, "flush/written#3", "power-loss"), reference, options,
        torn=False,
    )
    assert {"FSYNC_WRONG_FILE", "REQUEST_ENVELOPE_LOST"} <= set(result.codes)
    wrong = next(v for v in result.violations if v.code == "FSYNC_WRONG_FILE")
    assert wrong.evidence["fsynced"] == [str(Path(reference.log.path).with_suffix(".jsonl.lock"))]


def test_a_target_that_reports_no_file_facts_gets_power_loss_and_torn_write_cases(
    tmp_path: Path,
) -> None:
    reference, options = traced(PAYMENT, tmp_path / "s", NO_FACTS)
    assert not any(m.get("fact") in ("write", "fsync", "create") for m in reference.trace)
    power = [classic_fault(name) for name in ("power-loss", "torn-write")]
    planned = [  # through the classic drive's fault table
        (fault, case) for fault in power for case in fault.plan(reference, Planning(options))
    ]
    written = [o for o in reference.occurrences if o.startswith("flush/written#")]
    assert len(planned) == 2 * len(written) >= 10  # a case at every flush, both faults
    # Run at the first flush after the charge only (the twelve cases pass or
    # fail alike, ~1.5 s each; tests/integration/test_io_shapes.py shows why
    # this flush catches a wrong file model).
    results = [fault.run(case, reference, options) for fault, case in planned
               if case.occurrence == "flush/written#3"]  # fmt: skip
    assert len(results) == 2
    assert [(r.case.id, r.verdict, r.codes) for r in results if r.verdict != "pass"] == []
    assert any("torn@" in r.detail and "mid-line" in r.detail for r in results)
    # Without the trace the same target cannot run these faults.
    facts, facts_options = traced(PAYMENT, tmp_path / "f", NO_FACTS, truth="facts")
    cases = plan_power_cases(facts, "power-loss")
    assert len(cases) == 1
    unsupported = run_power_case(cases[0], facts, facts_options, torn=False)
    assert unsupported.verdict == "error" and unsupported.codes == ("FAULT_UNSUPPORTED",)
    assert "target's file facts" in unsupported.detail


def test_without_strace_the_target_facts_are_the_ground_truth_and_say_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # strace cannot be uninstalled for one test: its lookup is replaced.
    monkeypatch.setattr(reference_module, "strace_path", lambda: None)
    reference, _ = traced(CHAT, tmp_path, truth="auto")
    assert reference.ground_truth == "facts"
    assert "strace is not installed" in reference.ground_truth_note
    assert reference.syscalls == ()
    with pytest.raises(lab.LabUsageError, match="needs strace"):
        traced(CHAT, tmp_path / "x", truth="syscalls")


def test_the_environment_turns_tracing_off_and_a_bad_value_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAULTLAB_GROUND_TRUTH", "facts")
    reference, _ = traced(CHAT, tmp_path, truth="auto")
    assert reference.ground_truth == "facts"
    monkeypatch.setenv("FAULTLAB_GROUND_TRUTH", "bogus")
    with pytest.raises(lab.LabUsageError, match="FAULTLAB_GROUND_TRUTH='bogus'"):
        traced(CHAT, tmp_path / "x", truth="auto")


def test_a_strace_that_cannot_trace_here_falls_back_instead_of_failing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A real executable standing in for a strace that ptrace is denied to
    # (as in a locked-down container): it exits 1 with strace's message.
    fake = tmp_path / "strace"
    message = "strace: ptrace(PTRACE_TRACEME, ...): Operation not permitted"
    fake.write_text(f"#!/bin/sh\necho '{message}' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setattr(reference_module, "strace_path", lambda: str(fake))
    reference, _ = traced(CHAT, tmp_path / "w", truth="auto")
    assert reference.ground_truth == "facts"
    assert "Operation not permitted" in reference.ground_truth_note
    with pytest.raises(lab.LabUsageError, match="Operation not permitted"):
        traced(CHAT, tmp_path / "x", truth="syscalls")


def test_file_io_the_trace_cannot_show_is_trace_unsupported_never_a_violation(
    tmp_path: Path,
) -> None:
    # A shared writable mmap of a session file: the model names it, and the
    # power cases say TRACE_UNSUPPORTED instead of judging a gap.
    reference, options = traced(PAYMENT, tmp_path, MMAP)
    assert reference.trace_unsupported and "mmap" in reference.trace_unsupported[0]
    assert reference.syscalls == () and reported_disagreements(reference) == []
    for name in ("power-loss", "torn-write"):
        fault = classic_fault(name)
        (case,) = fault.plan(reference, Planning(options))
        result = fault.run(case, reference, options)
        assert result.verdict == "error" and result.codes == ("TRACE_UNSUPPORTED",)
        assert "notes.bin" in result.violations[0].message
        assert "FAULTLAB_GROUND_TRUTH=facts" in result.violations[0].message
