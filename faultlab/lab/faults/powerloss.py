# The `power-loss` and `torn-write` faults, derived offline from one recorded
# run.  A SIGKILL loses only what the process had not handed to the kernel; a
# power loss also drops every byte written after the file's last fsync, and a
# new file whose directory was never fsynced vanishes.  The probe trace of the
# fault-free run says, fact by fact, what each file held and what was durable
# (create, dirsync, write, fsync, truncate, cut); the log is append-only and
# deterministic, so the bytes it held at any moment are a prefix of its final
# bytes.  One reference run therefore yields every crash state at every
# `flush/written` occurrence without another process:
#   power-loss  each file cut back to its last fsynced size ("synced")
#   torn-write  as power-loss, but a prefix of the unsynced bytes survives,
#               cut in the middle of a line, on a line boundary, and at each
#               4 KiB page boundary inside the unsynced range
# Each state is checked offline for the durable-log guarantees (G1, G2, G4,
# G5, and G7 on the lab's expected repair); one representative state per case
# is then written into a fresh session directory and recovered by the real
# target (`--resume --repair-only`, `--resume`) under the full oracle, so G3,
# G6 and G8 are checked too.  This module never imports the runtime.
from __future__ import annotations

import itertools
import os
import shutil
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import orjson

from faultlab.lab.errors import LabUsageError
from faultlab.lab.faults.sigkill import recover, run_case
from faultlab.lab.oracle.case import Case, CaseResult, Verdict
from faultlab.lab.oracle.checks import (
    check_case,
    check_crash_durability,
    check_crash_integrity,
)
from faultlab.lab.oracle.codes import Violation
from faultlab.lab.oracle.expected import after_repair, expected_repair
from faultlab.lab.oracle.validity import check_history
from faultlab.lab.process.reference import LabOptions, Reference, run_reference, slug, write_trace
from faultlab.lab.process.spawn import ChildHung
from faultlab.lab.process.target import bundled_scenarios, reference_target, session_files
from faultlab.lab.read.jsonl import LogView, parse_log
from faultlab.scenario import load_scenario

__all__ = [
    "OFFLINE_CODES",
    "PAGE",
    "POWER_FAULTS",
    "CrashState",
    "FileState",
    "UnsupportedTrace",
    "check_state",
    "derive_states",
    "file_states",
    "offline_rate",
    "plan_power_cases",
    "representative",
    "run_power_case",
    "states_at",
    "unsupported",
]

POWER_FAULTS = ("power-loss", "torn-write")
WRITTEN = "flush/written"
PAGE = 4096
# A batch of many lines (a long stream, or a target that never fsyncs) would
# give two states per line: beyond this many lines, evenly spaced ones are kept
# (always the first and the last).
MAX_LINES = 64
# The bytes of this many failing states are kept in a case's directory (all
# of them are listed in its states.jsonl, and derive_states regenerates any).
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


class UnsupportedTrace(Exception):
    """The trace cannot give this fault's crash states (FAULT_UNSUPPORTED)."""


@dataclass(frozen=True, slots=True)
class FileState:
    """What the trace says about one file at one point of the run.

    ``written``: bytes the kernel held; ``synced``: bytes an fsync made
    durable; ``linked``: its directory entry is durable (it was not created
    in this run, or a ``dirsync`` of its directory followed its ``create``).
    """

    path: str
    written: int
    synced: int
    linked: bool
    created: bool = False

    @property
    def durable(self) -> int | None:
        """The file's size after a power loss; ``None``: the file vanishes."""
        return self.synced if self.linked else None


@dataclass(frozen=True, slots=True)
class CrashState:
    """One state the log may be found in after the fault.

    ``log`` is its bytes (``None``: the file vanished); ``trace`` is the probe
    trace up to and including the crash point (the ``flush/written``
    occurrence, marked parked); ``synced`` / ``written`` are the log's durable
    and written sizes at that point.
    """

    label: str
    log: bytes | None
    trace: tuple[dict[str, Any], ...]
    synced: int = 0
    written: int = 0

    @property
    def vanished(self) -> bool:
        return self.log is None

    def view(self, path: str) -> LogView:
        """The log as the lab's reader sees it (a torn tail is cut)."""
        if self.log is None:
            return LogView(path, False, None, (), 0, 0, 0, ())
        return parse_log(self.log, path)


# -- the file rules ---------------------------------------------------------


def _same_dir(path: str, directory: str) -> bool:
    return os.path.normpath(os.path.dirname(path)) == os.path.normpath(directory)


def file_states(trace: Iterable[dict[str, Any]]) -> dict[str, FileState]:
    """Every file the trace's facts name, as it stands after the last message.

    A file first named by a fact other than ``create`` existed before the run:
    its entry is durable, and so are the bytes before its first reported write
    (``offset``) or fsync (``size``).
    """
    files: dict[str, FileState] = {}

    def known(path: str, size: int) -> FileState:
        return files.get(path) or FileState(path, size, size, linked=True)

    for message in trace:
        kind = message.get("fact")
        if kind is None:
            continue
        if kind == "dirsync":
            directory = str(message.get("dir", ""))
            for name, state in list(files.items()):
                if state.created and not state.linked and _same_dir(name, directory):
                    files[name] = replace(state, linked=True)
            continue
        path = message.get("file")
        if not isinstance(path, str):
            continue
        size = _int(message.get("size"))
        if kind == "create":
            files[path] = FileState(path, size, size, linked=False, created=True)
        elif kind == "write":
            offset, count = _int(message.get("offset")), _int(message.get("bytes"))
            files[path] = replace(known(path, offset), written=offset + count)
        elif kind == "fsync":
            state = known(path, size)
            files[path] = replace(state, written=max(state.written, size), synced=size)
        elif kind in ("truncate", "cut"):
            # Not fsynced: the file is shorter now, its durable size no longer
            # than before (the fsync that follows a cut makes it exact).
            state = known(path, size)
            files[path] = replace(state, written=size, synced=min(state.synced, size))
    return files


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def unsupported(trace: Sequence[dict[str, Any]]) -> str | None:
    """Why the trace cannot give power-loss states (``None``: it can)."""
    if not any(m.get("fact") == "write" for m in trace):
        return "the target reports no write facts, so the lab cannot tell unsynced bytes"
    if not any(m.get("boundary") == WRITTEN for m in trace):
        return f"the target never reaches {WRITTEN}, so there is no crash point to cut at"
    return None


def _crash_prefix(trace: Sequence[dict[str, Any]], occurrence: str) -> tuple[dict[str, Any], ...]:
    name, _, number = occurrence.partition("#")
    if name != WRITTEN:
        raise LabUsageError(f"{occurrence}: power-loss states are cut at {WRITTEN}#n only")
    if not (number or "1").isdigit() or int(number or "1") < 1:
        raise LabUsageError(f"{occurrence}: the occurrence number must be a whole number >= 1")
    n = int(number or "1")
    for index, message in enumerate(trace):
        if message.get("boundary") == WRITTEN and message.get("n") == n:
            return (*trace[:index], {**message, "parked": True})
    raise LabUsageError(f"the fault-free run never reached {WRITTEN}#{n}")


def _log_path(prefix: Sequence[dict[str, Any]]) -> str:
    file = prefix[-1].get("file")
    if isinstance(file, str):
        return file
    for message in reversed(prefix):  # a target that does not name it there
        if message.get("fact") in ("write", "create") and isinstance(message.get("file"), str):
            return str(message["file"])
    raise UnsupportedTrace(f"no write fact names the file written at {prefix[-1]}")


def states_at(prefix: Sequence[dict[str, Any]], final: bytes, fault: str) -> list[CrashState]:
    """The crash states of the log at the end of ``prefix`` (a trace cut just
    after a ``flush/written``), given bytes of which every content the log
    held is a prefix (its final bytes, or the file as a SIGKILL left it)."""
    if fault not in POWER_FAULTS:
        raise LabUsageError(f"fault {fault!r} is not one of {', '.join(POWER_FAULTS)}")
    reason = unsupported(prefix)
    if reason is not None:
        raise UnsupportedTrace(reason)
    trace = tuple(prefix)
    log = file_states(trace).get(_log_path(trace))
    if log is None:
        raise UnsupportedTrace("no fact of the trace names the log file")
    if log.written > len(final):
        raise UnsupportedTrace(
            f"the trace says {log.written} bytes were written to {log.path}, "
            f"but the log has {len(final)}"
        )
    if log.durable is None:
        return [CrashState("vanished", None, trace, 0, log.written)]
    synced = CrashState("synced", final[: log.synced], trace, log.synced, log.written)
    if fault == "power-loss":
        return [synced]
    cuts = _torn_offsets(final, log.synced, log.written)
    if not cuts:
        return [synced]  # nothing unsynced: the only state is the durable one
    return [
        CrashState(
            f"torn@{offset} ({', '.join(kinds)})", final[:offset], trace, log.synced, log.written
        )
        for offset, kinds in sorted(cuts.items())
    ]


def _torn_offsets(data: bytes, low: int, high: int) -> dict[int, list[str]]:
    """Byte offsets strictly inside (low, high) to cut the unsynced bytes at."""
    bounds = [low]
    at = data.find(b"\n", low, high)
    while at >= 0:
        bounds.append(at + 1)
        at = data.find(b"\n", at + 1, high)
    if bounds[-1] != high:
        bounds.append(high)  # a last write that did not end its line
    lines = list(itertools.pairwise(bounds))
    if len(lines) > MAX_LINES:
        step = (len(lines) - 1) / (MAX_LINES - 1)
        lines = [lines[round(i * step)] for i in range(MAX_LINES)]
    cuts: dict[int, list[str]] = {}
    for start, end in lines:
        middle = (start + end) // 2
        if start < middle < end:
            cuts.setdefault(middle, []).append("mid-line")
        if low < end < high:
            cuts.setdefault(end, []).append("line")
    for page in range((low // PAGE + 1) * PAGE, high, PAGE):
        cuts.setdefault(page, []).append("page")
    return cuts


def derive_states(reference: Reference, occurrence: str, fault: str) -> list[CrashState]:
    """Every crash state of ``fault`` at ``occurrence`` (``flush/written#k``),
    from the reference run's trace and final log bytes alone."""
    prefix = _crash_prefix(reference.trace, occurrence)
    return states_at(prefix, reference.log_bytes, fault)


def representative(states: Sequence[CrashState], fault: str) -> CrashState:
    """The state recovered by real processes: the synced one for power-loss,
    the last mid-line torn one for torn-write (a partial batch whose torn last
    line the loader must cut)."""
    if fault == "torn-write":
        torn = [s for s in states if "mid-line" in s.label]
        if torn:
            return torn[-1]
    return states[0]


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


def plan_power_cases(reference: Reference, fault: str) -> list[Case]:
    """One case per ``flush/written`` occurrence of the reference run.  A target
    that cannot run the fault still gets one case, which reports
    FAULT_UNSUPPORTED instead of passing silently."""
    if fault not in POWER_FAULTS:
        raise LabUsageError(f"fault {fault!r} is not one of {', '.join(POWER_FAULTS)}")
    occurrences = [o for o in reference.occurrences if o.partition("#")[0] == WRITTEN]
    if unsupported(reference.trace) is not None or not occurrences:
        occurrences = [f"{WRITTEN}#1"]
    return [Case(reference.scenario_path, occurrence, fault) for occurrence in occurrences]


def _ledger_at(reference: Reference, prefix: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
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


def run_power_case(case: Case, reference: Reference, options: LabOptions) -> CaseResult:
    """Derive and check every crash state of ``case`` offline, then recover one
    representative state with the real target and run the full oracle on it."""
    started = time.monotonic()
    where = options.workdir / "cases" / slug(case.id)
    artifacts = {"dir": str(where)}

    def result(verdict: Verdict, violations: Sequence[Violation], detail: str = "") -> CaseResult:
        return CaseResult(
            case, verdict, tuple(violations), time.monotonic() - started, detail, artifacts
        )

    if case.fault not in POWER_FAULTS:
        raise LabUsageError(f"fault {case.fault!r} is not one of {', '.join(POWER_FAULTS)}")
    if reference.returncode != 0:
        message = f"the fault-free run exited with status {reference.returncode}"
        return result(
            "error", [Violation("REFERENCE_FAILED", message, {"status": reference.returncode})]
        )
    states: list[CrashState] = []
    reason = unsupported(reference.trace)
    if reason is None:
        if case.occurrence not in reference.occurrences:
            message = f"the fault-free run never reached {case.occurrence}"
            return result("drift", [Violation("DRIFT", message)], message)
        try:
            states = derive_states(reference, case.occurrence, case.fault)
        except UnsupportedTrace as exc:
            reason = str(exc)
    if reason is not None:
        violation = Violation(
            "FAULT_UNSUPPORTED",
            f"{case.fault} cannot run on this target: {reason}",
            {"fault": case.fault},
        )
        return result("error", [violation], reason)

    shutil.rmtree(where, ignore_errors=True)
    chosen = representative(states, case.fault)
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
    no_fsync = not any(m.get("fact") == "fsync" for m in reference.trace)
    detail = f"{len(states)} state(s), recovered: {chosen.label}"
    if no_fsync:
        detail += "; the target reports no fsync: none of its writes counts as durable"

    try:
        recovered = _recover(case, reference, options, chosen, where, artifacts)
    except ChildHung as hung:
        violation = Violation("CHILD_HUNG", f"recovery of {case.id} [{chosen.label}]: {hung}")
        return result("hung", [violation, *offline, *check_state(chosen, reference)], detail)
    violations = [*_tagged(recovered, chosen.label), *offline]
    return result("fail" if violations else "pass", violations, detail)


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
) -> list[Violation]:
    """Put ``state`` in a fresh session directory, let the target repair and
    resume it as after a SIGKILL (runner.run_case), and run the full oracle."""
    session = where / "session"
    session.mkdir(parents=True, exist_ok=True)
    log_path, ledger_path = session_files(session)
    if state.log is not None:
        log_path.write_bytes(state.log)
    ledger = _ledger_at(reference, state.trace)
    if ledger:
        ledger_path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in ledger))
    write_trace(where / "trace.jsonl", list(state.trace))
    artifacts["trace"] = str(where / "trace.jsonl")
    observation = recover(
        case, reference, options, where=where, trace=state.trace,
        crashed=state.view(str(log_path)), crashed_bytes=state.log or b"", artifacts=artifacts,
    )  # fmt: skip
    crashed = observation.crashed
    # The full oracle, plus the offline check's own G7 (on the lab's repair).
    return [*check_case(observation), *_expected_history(crashed, reference)]


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
        cases = [c for fault in POWER_FAULTS for c in plan_power_cases(reference, fault)]
        budget = 0.2 if quick else 1.0
        states = 0
        began = time.perf_counter()
        while True:
            for case in cases:
                for state in derive_states(reference, case.occurrence, case.fault):
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
