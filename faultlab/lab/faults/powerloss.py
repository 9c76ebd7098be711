# The `power-loss` and `torn-write` faults as cases: one per `flush/written`
# occurrence of the fault-free run, each judged on the crash states derived
# offline from that one run (powerstates.py); the two differ only in `torn`
# (a prefix of the unsynced bytes survives), which the classic drive's fault
# table (table.py) binds into each entry.  Each state is checked offline
# for the durable-log guarantees (G1, G2, G4, G5, and G7 on the lab's expected
# repair); one representative state per case is then written into a fresh
# session directory and recovered by the real target (`--resume
# --repair-only`, `--resume`) under the full oracle, so G3, G6 and G8 are
# checked too.  Also `offline_rate`, the speed of the offline check against
# real SIGKILL cases, for `faultlab bench`.  This module never imports the
# runtime.
from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

from faultlab.lab.faults.powerstates import (
    WRITTEN,
    CrashState,
    UnsupportedTrace,
    derive_states,
    file_trace,
    representative,
    truth_log_path,
    unsupported,
)
from faultlab.lab.faults.recoverypower import RecoveryRecorder, check_recovery, traces_recovery
from faultlab.lab.faults.sigkill import recover, run_case
from faultlab.lab.faults.sqlitestates import sqlite_states
from faultlab.lab.faults.systruth import check_reported_facts
from faultlab.lab.oracle.case import Case, CaseResult, Verdict
from faultlab.lab.oracle.checks import (
    check_case,
    check_crash_durability,
    check_crash_integrity,
)
from faultlab.lab.oracle.codes import Violation
from faultlab.lab.oracle.expected import after_repair, expected_repair
from faultlab.lab.oracle.validity import check_history
from faultlab.lab.oracle.verdicts import drifted, hung
from faultlab.lab.process.records import LedgerRecord
from faultlab.lab.process.reference import (
    LabOptions,
    Reference,
    make_child,
    run_reference,
    slug,
    write_trace,
)
from faultlab.lab.process.spawn import ChildHung
from faultlab.lab.process.target import bundled_scenarios, reference_target, session_files
from faultlab.lab.read.view import LogView
from faultlab.scenario import load_scenario

__all__ = [
    "OFFLINE_CODES",
    "check_state",
    "crash_states",
    "offline_rate",
    "plan_power_cases",
    "run_power_case",
]

# The bytes of this many failing states are kept in a case's directory (all
# of them are listed in its states.jsonl, and crash_states regenerates any).
SAVED_STATES = 10
# The codes the offline check can report (the rest need a real recovery).
OFFLINE_CODES = frozenset(
    {
        "REQUEST_ENVELOPE_LOST",
        "TOOL_INTENT_LOST",
        "SETTLED_STEP_LOST",
        "COMPLETED_TURN_LOST",
        "LOG_NOT_PREFIX",
        "SEQ_GAP",
        "SEQ_DUPLICATE",
        "CORRUPT_COMMITTED_LOG",
        "PROVIDER_INVALID_HISTORY",
    }
)


# -- the offline check ------------------------------------------------------


def _tagged(violations: Iterable[Violation], label: str) -> list[Violation]:
    return [
        Violation(v.code, f"[{label}] {v.message}", {**v.evidence, "state": label})
        for v in violations
    ]


def _expected_history(crashed: LogView, reference: Reference) -> list[Violation]:
    """G7 on the crashed log as the lab's own expected repair would leave it."""
    tools = {spec.name: spec for spec in reference.scenario.tools}
    repaired = after_repair(crashed.events, expected_repair(crashed.events, tools))
    return [
        Violation(
            "PROVIDER_INVALID_HISTORY",
            f"crashed log after the expected repair: {problem.message}",
            {"log": "expected-repair", "seq": problem.seq},
        )
        for problem in check_history(repaired, require_closed=True)
    ]


def check_state(state: CrashState, reference: Reference) -> list[Violation]:
    """G5, G1, G2, G4 and G7 (on the lab's expected repair) for one crash
    state, without any process.  Evidence carries the state's label."""
    crashed = state.view(reference.log.path)
    found = check_crash_integrity(crashed, reference.log)
    found += check_crash_durability(state.trace, crashed, reference.log)
    found += _expected_history(crashed, reference)
    return _tagged(found, state.label)


# -- cases ------------------------------------------------------------------


def crash_states(reference: Reference, occurrence: str, *, torn: bool) -> list[CrashState]:
    """Every crash state of a power loss (`torn`: a prefix of the unsynced
    bytes survives) at ``occurrence``: a JSONL log's cut from its final bytes
    (powerstates.py), a SQLite database's rebuilt from the traced writes
    (sqlitestates.py)."""
    if reference.backend == "sqlite":
        return sqlite_states(reference, occurrence, torn=torn)
    return derive_states(reference, occurrence, torn=torn)


def plan_power_cases(reference: Reference, fault: str) -> list[Case]:
    """The cases of power fault `fault` (its name): one per ``flush/written``
    occurrence of the reference run.  A target that cannot run the fault
    still gets one case, which reports FAULT_UNSUPPORTED instead of passing
    silently."""
    occurrences = [o for o in reference.occurrences if o.partition("#")[0] == WRITTEN]
    untraceable = bool(reference.trace_unsupported)
    if untraceable or unsupported(file_trace(reference)) is not None or not occurrences:
        occurrences = [f"{WRITTEN}#1"]
    return [Case(reference.scenario_path, occurrence, fault) for occurrence in occurrences]


def _ledger_at(reference: Reference, prefix: Sequence[Mapping[str, Any]]) -> list[LedgerRecord]:
    """The world ledger at the crash point (the world does not lose power): the
    reference's records whose ``tool/effect`` was reached before it."""
    applied: dict[str, int] = {}
    for message in prefix:
        if message.get("boundary") == "tool/effect" and message.get("applied") is not False:
            call_id = str(message.get("callId"))
            applied[call_id] = applied.get(call_id, 0) + 1
    kept = []
    for record in reference.ledger:
        call_id = str(record.get("callId"))
        if applied.get(call_id, 0) > 0:
            applied[call_id] -= 1
            kept.append(record)
    return kept


def run_power_case(
    case: Case, reference: Reference, options: LabOptions, *, torn: bool
) -> CaseResult:
    """Derive and check every crash state of ``case`` (`torn`: a prefix of
    the unsynced bytes survives, torn-write) offline, then recover one
    representative state with the real target and run the full oracle on it."""
    started = time.monotonic()
    where = options.workdir / "cases" / slug(case.id)
    artifacts = {"dir": str(where)}

    def result(verdict: Verdict, violations: Sequence[Violation], detail: str = "") -> CaseResult:
        return CaseResult(
            case, verdict, tuple(violations), time.monotonic() - started, detail, artifacts
        )

    if reference.returncode != 0:
        message = f"the fault-free run exited with status {reference.returncode}"
        return result(
            "error", [Violation("REFERENCE_FAILED", message, {"status": reference.returncode})]
        )
    if reference.trace_unsupported:
        calls = "; ".join(reference.trace_unsupported)
        return result("error", [Violation(
            "TRACE_UNSUPPORTED",
            f"{case.fault} cannot be judged from this run's system calls, which did file I/O "
            f"the lab cannot see into: {calls}. With FAULTLAB_GROUND_TRUTH=facts the target's "
            "own file facts are judged instead",
            {"fault": case.fault, "calls": list(reference.trace_unsupported)},
        )])  # fmt: skip
    states: list[CrashState] = []
    reason = unsupported(file_trace(reference))
    if reason is None:
        if case.occurrence not in reference.occurrences:
            message = f"the fault-free run never reached {case.occurrence}"
            return result(*drifted(message), message)
        try:
            states = crash_states(reference, case.occurrence, torn=torn)
        except UnsupportedTrace as exc:
            reason = str(exc)
    if reason is not None:
        violation = Violation(
            "FAULT_UNSUPPORTED",
            f"{case.fault} cannot run on this target: {reason}",
            {"fault": case.fault},
        )
        return result("error", [violation], _truth(reference, reason))

    shutil.rmtree(where, ignore_errors=True)
    chosen = representative(states, torn=torn)
    offline: list[Violation] = []
    summary = []
    saved = 0
    for state in states:
        found = check_state(state, reference) if state is not chosen else []
        offline += found
        size = None if state.log is None else len(state.log)
        summary.append(
            {"state": state.label, "size": size, "codes": sorted({v.code for v in found})}
        )
        if found and state.log is not None and saved < SAVED_STATES:
            saved += 1  # beside the other artifacts, so a report copies them
            _save(where / f"state-{slug(state.label)}.jsonl", state.log)
    _save(where / "states.jsonl", b"".join(orjson.dumps(s) + b"\n" for s in summary))
    artifacts["states"] = str(where / "states.jsonl")
    # Under the system's facts only an fsync of the log counts (its creation
    # may have fsynced a temp file); under the target's, any reported one.
    log = truth_log_path(reference)
    no_fsync = not any(
        m.get("fact") == "fsync" and (log is None or m.get("file") == log)
        for m in file_trace(reference)
    )
    detail = f"{len(states)} state(s), recovered: {chosen.label}"
    if no_fsync:
        made = "reports no fsync" if log is None else "makes no fsync of its log"
        detail += f"; the target {made}: none of its writes counts as durable"
    detail = _truth(reference, detail)
    # What the target claimed about its files up to the crash point, checked
    # against what its system calls did (nothing under the facts fallback).
    offline += check_reported_facts(reference, _crash_index(reference, case.occurrence))

    try:
        recovered, during = _recover(case, reference, options, chosen, where, artifacts,
                                     torn=torn)  # fmt: skip
    except ChildHung as exc:
        message = f"recovery of {case.id} [{chosen.label}]: {exc}"
        return result(*hung(message, *offline, *check_state(chosen, reference)), detail)
    # The run's own first, then power losses during its recovery.
    violations = [*_tagged(recovered, chosen.label), *offline, *_tagged(during, chosen.label)]
    return result("fail" if violations else "pass", violations, detail)


def _truth(reference: Reference, detail: str) -> str:
    """`detail` with the ground truth its states came from."""
    if reference.ground_truth == "syscalls":
        return f"{detail}; ground truth: system calls"
    note = f" ({reference.ground_truth_note})" if reference.ground_truth_note else ""
    return f"{detail}; ground truth: the target's file facts{note}"


def _crash_index(reference: Reference, occurrence: str) -> int:
    """The index in the probe trace of the crash point ``flush/written#n``."""
    _name, _, number = occurrence.partition("#")
    n = int(number or "1")
    for index, message in enumerate(reference.trace):
        if message.get("boundary") == WRITTEN and message.get("n") == n:
            return index
    return len(reference.trace)


def _save(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def _recover(
    case: Case,
    reference: Reference,
    options: LabOptions,
    state: CrashState,
    where: Path,
    artifacts: dict[str, str],
    *,
    torn: bool,
) -> tuple[list[Violation], list[Violation]]:
    """Put ``state`` in a fresh session directory, let the target repair and
    resume it as after a SIGKILL (`run_case` in faults/sigkill.py), and run the
    full oracle: its violations, and those of power losses during the
    recovery (recoverypower.py)."""
    session = where / "session"
    session.mkdir(parents=True, exist_ok=True)
    log_path, ledger_path = session_files(session)
    if state.files is not None:  # SQLite: the database and its journals as rebuilt
        log_path = session / os.path.basename(reference.log.path)
        for name, content in state.files:
            (session / name).write_bytes(content)
    elif state.log is not None:
        log_path.write_bytes(state.log)
    ledger = _ledger_at(reference, state.trace)
    if ledger:
        ledger_path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in ledger))
    write_trace(where / "trace.jsonl", list(state.trace))
    artifacts["trace"] = str(where / "trace.jsonl")
    # The recovery is crashed too: its children are recorded (recoverypower.py).
    recorder = None
    if reference.backend == "jsonl":
        recorder = RecoveryRecorder(traces_recovery(case, reference, options, torn=torn))
    observation = recover(
        case, reference, options, where=where, trace=state.trace,
        crashed=state.view(str(log_path)), crashed_bytes=state.log or b"", artifacts=artifacts,
        make=make_child if recorder is None else recorder.make,
    )  # fmt: skip
    crashed = observation.crashed
    # The full oracle, plus the offline check's own G7 (on the lab's repair).
    found = [*check_case(observation), *_expected_history(crashed, reference)]
    if recorder is None:
        return found, []
    statuses = {"repair": observation.repair_status.returncode,
                "resume": observation.resume_status.returncode}  # fmt: skip
    return found, check_recovery(recorder.runs(log_path.name, statuses))


# -- speed ------------------------------------------------------------------


def offline_rate(
    quick: bool = False,
    *,
    scenario: str | Path | None = None,
    workdir: Path | None = None,
    spawn: str = "fork",
) -> dict[str, Any]:
    """Offline crash states checked per second vs real SIGKILL cases per second,
    measured in the same run on one scenario (default: the bundled payment.toml).
    For `faultlab bench`."""
    if scenario is None:
        scenario = bundled_scenarios() / "payment.toml"
    path = str(Path(scenario).resolve())
    own = workdir is None
    where = Path(tempfile.mkdtemp(prefix="faultlab-offline-")) if workdir is None else workdir
    try:
        options = LabOptions(reference_target(), where, 60.0, spawn)
        reference = run_reference(path, load_scenario(path), options)
        if reference.returncode != 0:
            raise RuntimeError(f"the fault-free run of {path} failed: {reference.stderr}")
        points = [c.occurrence for c in plan_power_cases(reference, "power-loss")]
        budget = 0.2 if quick else 1.0
        states = 0
        began = time.perf_counter()
        while True:
            for occurrence in points:
                for torn in (False, True):  # power-loss, then torn-write
                    for state in crash_states(reference, occurrence, torn=torn):
                        check_state(state, reference)
                        states += 1
            offline_seconds = time.perf_counter() - began
            if offline_seconds >= budget:
                break
        every = max(1, len(reference.occurrences) // (3 if quick else 10))
        sample = reference.occurrences[::every]
        began = time.perf_counter()
        for occurrence in sample:
            run_case(Case(path, occurrence, "sigkill"), reference, options)
        real_seconds = time.perf_counter() - began
    finally:
        if own:
            shutil.rmtree(where, ignore_errors=True)
    offline_rate_ = states / offline_seconds
    real_rate = len(sample) / real_seconds
    return {
        "scenario": Path(path).name,
        "offlineStates": states,
        "offlineSeconds": round(offline_seconds, 4),
        "offlineStatesPerSecond": round(offline_rate_, 1),
        "realCases": len(sample),
        "realSeconds": round(real_seconds, 4),
        "realCasesPerSecond": round(real_rate, 2),
        "ratio": round(offline_rate_ / real_rate, 1),
    }
