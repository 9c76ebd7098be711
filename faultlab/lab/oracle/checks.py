# The oracle: compares ground truth (the probe trace of the crashed child, the
# reference run, the world ledger) with what was recovered (the crashed log,
# the log after the target's repair, the log after resume) and reports every
# broken guarantee with its stable code and evidence.  It reads logs with the
# lab's own reader and computes the expected repair itself: an oracle that
# shared the runtime's code would share its bugs.
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

import orjson

from faultlab.lab.oracle.case import Case
from faultlab.lab.oracle.claims import closed_turns_lost, cut_tail_lost, settled_steps_lost
from faultlab.lab.oracle.codes import Violation
from faultlab.lab.oracle.effects import duplicated_effects
from faultlab.lab.oracle.expected import expected_repair
from faultlab.lab.oracle.validity import check_history
from faultlab.lab.process.records import LedgerRecord
from faultlab.lab.process.spawn import ChildExit
from faultlab.lab.read.view import LogEvent, LogProblem, LogView
from faultlab.scenario import Scenario

__all__ = ["Observation", "check_case", "check_coverage", "event_key"]


@dataclass(frozen=True, slots=True)
class Observation:
    """Everything the lab saw of one crash case."""

    scenario: Scenario
    case: Case
    reference_log: LogView
    reference_ledger: tuple[LedgerRecord, ...]
    trace: tuple[Mapping[str, Any], ...]
    crashed: LogView
    repaired: LogView
    repair_status: ChildExit
    final: LogView
    resume_status: ChildExit
    final_ledger: tuple[LedgerRecord, ...]
    # The fault changed what the child appended after the kill point (a
    # signal, a failed flush): the log is not expected to follow the
    # reference's beyond it.
    diverged: bool = False
    # JSONL: the crashed log's bytes and the cut files beside the log after the
    # repair child, by name (None: not looked at, e.g. SQLite or no repair).
    crashed_bytes: bytes = b""
    cut_files: tuple[tuple[str, bytes], ...] | None = None


def event_key(event: LogEvent) -> tuple[int, str, bytes]:
    return event.seq, event.type, orjson.dumps(event.data, option=orjson.OPT_SORT_KEYS)


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


def _passed(trace: Sequence[Mapping[str, Any]], boundary: str) -> list[Mapping[str, Any]]:
    # Occurrences the child went past: the parked one never ran on.
    return [m for m in trace if m.get("boundary") == boundary and not m.get("parked")]


def check_crash_integrity(
    crashed: LogView, reference_log: LogView, *, prefix: bool = True
) -> list[Violation]:
    """G5 on a crashed log alone: it reads cleanly and (``prefix``) is a prefix
    of the reference log.  No process needed: also used for power-loss states."""
    found = [
        Violation(
            _integrity_code(p),
            f"crashed log: {p.message}",  # the message names the line (or row) itself
            {"line": p.line, "offset": p.offset},
        )
        for p in crashed.problems
    ]
    event = _first_difference(crashed.events, reference_log.events) if prefix else None
    if event is not None:
        found.append(
            Violation(
                "LOG_NOT_PREFIX",
                f"crashed log line {event.line} (seq {event.seq}, {event.type}) is not what "
                "the reference run appended there",
                {"seq": event.seq, "line": event.line},
            )
        )
    return found


def _integrity_code(problem: LogProblem) -> str:
    # A log without a readable header lost its committed start.
    return problem.code if problem.code != "BAD_HEADER" else "CORRUPT_COMMITTED_LOG"


def _first_difference(events: Sequence[LogEvent], reference: Sequence[LogEvent]) -> LogEvent | None:
    """The first event of `events` that is not the event at its place in `reference`."""
    for index, event in enumerate(events):
        if index >= len(reference) or event_key(event) != event_key(reference[index]):
            return event
    return None


def check_integrity(obs: Observation) -> list[Violation]:
    """G5: the crashed log reads cleanly and is a prefix of the reference log."""
    found = check_crash_integrity(obs.crashed, obs.reference_log, prefix=not obs.diverged)
    if obs.cut_files is not None and obs.repair_status.returncode == 0:
        log_name = PurePath(obs.crashed.path).name
        found += cut_tail_lost(obs.crashed, obs.crashed_bytes, dict(obs.cut_files), log_name)
    for later_name, later in (("repaired", obs.repaired), ("final", obs.final)):
        earlier = obs.crashed if later_name == "repaired" else obs.repaired
        event = _first_difference(earlier.events, later.events)
        if event is not None:
            found.append(
                Violation(
                    "LOG_NOT_PREFIX",
                    f"the {later_name} log does not start with the log it was made from "
                    f"(first difference at seq {event.seq})",
                    {"log": later_name, "seq": event.seq},
                )
            )
        found.extend(
            Violation(
                _integrity_code(p),
                f"{later_name} log: {p.message}",
                {"log": later_name},
            )
            for p in later.problems
        )
    return found


def check_durability(obs: Observation) -> list[Violation]:
    """G1, G2, G4: what the child acted on or claimed durable is in the crashed log."""
    return check_crash_durability(obs.trace, obs.crashed, obs.reference_log)


def check_crash_durability(
    trace: Sequence[Mapping[str, Any]], crashed: LogView, reference_log: LogView
) -> list[Violation]:
    """G1, G2, G4 from a trace and a crashed log alone (no process needed: also
    used for power-loss states)."""
    found: list[Violation] = []
    events = crashed.events
    headers = {e.data.get("requestId"): e for e in events if e.type == "request/header"}
    for message in _passed(trace, "request/durable"):
        request_id = message.get("requestId")
        header = headers.get(request_id)
        digest = (header.data.get("envelope") or {}).get("digest") if header else None
        if header is None or digest != message.get("digest"):
            found.append(
                Violation(
                    "REQUEST_ENVELOPE_LOST",
                    f"request {request_id} reached the model but its request/header "
                    + ("was not in the crashed log" if header is None else "had another digest"),
                    {
                        "requestId": request_id,
                        "digest": message.get("digest"),
                        "loggedDigest": digest,
                    },
                )
            )
    calls = {
        e.data.get("callId")
        for e in events
        if e.type == "tool/call" and e.data.get("parentCallId") is None
    }
    for message in _passed(trace, "tool/durable"):
        if message.get("parentCallId") is not None:
            continue  # a nested call is covered by its parent's checkpoint
        if message.get("callId") not in calls:
            found.append(
                Violation(
                    "TOOL_INTENT_LOST",
                    f"the body of {message.get('callId')} started but its tool/call was not in "
                    "the crashed log",
                    {"callId": message.get("callId")},
                )
            )
    flushed = [m.get("last", -1) for m in trace if m.get("fact") == "flush" and m.get("ok")]
    claimed = max(flushed, default=-1)
    if claimed >= len(events):
        lost = list(range(len(events), claimed + 1))
        reference = reference_log.events
        turn_ends = [s for s in lost if s < len(reference) and reference[s].type == "turn/end"]
        code = "COMPLETED_TURN_LOST" if turn_ends else "SETTLED_STEP_LOST"
        found.append(
            Violation(
                code,
                f"a flush up to seq {claimed} completed, but the crashed log ends at seq "
                f"{len(events) - 1}",
                {"flushedThrough": claimed, "lastSeq": len(events) - 1, "lostTurnEnds": turn_ends},
            )
        )
    if not any(v.code == "COMPLETED_TURN_LOST" for v in found):
        found.extend(closed_turns_lost(trace, events))
    if not any(v.code in ("COMPLETED_TURN_LOST", "SETTLED_STEP_LOST") for v in found):
        found.extend(settled_steps_lost(trace, events))  # reported once, as the turn's
    return found


def _appended(before: LogView, after: LogView) -> list[LogEvent]:
    return list(after.events[len(before.events) :])


def _exit_failed(step: str, status: ChildExit) -> Violation:
    return Violation(
        "RESUME_FAILED",
        f"{step} exited with status {status.returncode}: {_last_line(status.stderr)}",
        {"status": status.returncode},
    )


def check_repair(obs: Observation) -> list[Violation]:
    """G3, G6 guidance, G7, G8 on the target's repair."""
    if obs.repair_status.returncode != 0:
        return [_exit_failed("repair", obs.repair_status)]
    found: list[Violation] = []
    tools = {spec.name: spec for spec in obs.scenario.tools}
    expected = expected_repair(obs.crashed.events, tools)
    added = _appended(obs.crashed, obs.repaired)
    actual = {e.data.get("callId"): e for e in added if e.type == "tool/result"}
    for want in expected.results:
        got = actual.get(want.call_id)
        error = (got.data.get("error") or {}) if got else {}
        cites = (got.data.get("sourceEventSeqs") or [None])[0] if got else None
        if got is None or error.get("code") != want.code or cites != want.cites:
            found.append(
                Violation(
                    "REPAIR_MISCLASSIFIED",
                    f"call {want.call_id} ({want.name}) should be repaired as {want.code} citing "
                    f"seq {want.cites}; got "
                    + ("no result" if got is None else f"{error.get('code')} citing seq {cites}"),
                    {
                        "callId": want.call_id,
                        "expected": want.code,
                        "actual": error.get("code"),
                        "expectedCites": want.cites,
                        "actualCites": cites,
                    },
                )
            )
            continue
        spec = tools.get(want.name)
        unsafe = spec is None or not spec.safe_to_retry
        if want.code == "TOOL_OUTCOME_UNKNOWN" and unsafe and error.get("retry") != "verify":
            found.append(
                Violation(
                    "UNSAFE_RETRY_GUIDANCE",
                    f"call {want.call_id} ({want.name}) is not idempotent, but its repair guidance "
                    f"is retry={error.get('retry')!r} instead of 'verify'",
                    {"callId": want.call_id, "retry": error.get("retry")},
                )
            )
    found.extend(_closers(expected.close_step, expected.close_turn, added))
    for problem in check_history(obs.repaired.events):
        found.append(
            Violation(
                "PROVIDER_INVALID_HISTORY",
                f"repaired log: {problem.message}",
                {"log": "repaired", "seq": problem.seq},
            )
        )
    return found


def check_resume(obs: Observation) -> list[Violation]:
    """G6 effects, G7 on the resumed history, G8 idempotence of repair."""
    if obs.resume_status.returncode != 0:
        return [_exit_failed("resume", obs.resume_status)]
    found: list[Violation] = []
    added = _appended(obs.repaired, obs.final)
    before_turn = []
    for event in added:
        if event.type == "turn/start":
            break
        before_turn.append(event)
    if before_turn:
        found.append(
            Violation(
                "REPAIR_NOT_IDEMPOTENT",
                f"loading the repaired log appended {len(before_turn)} more event(s) "
                f"({', '.join(e.type for e in before_turn)}) before any new turn",
                {"seqs": [e.seq for e in before_turn]},
            )
        )
    for problem in check_history(obs.final.events):
        found.append(
            Violation(
                "PROVIDER_INVALID_HISTORY",
                f"resumed log: {problem.message}",
                {"log": "final", "seq": problem.seq},
            )
        )
    found.extend(duplicated_effects(obs.scenario, obs.crashed, obs.reference_ledger,
                                    obs.final_ledger))  # fmt: skip
    return found


def check_expectations(obs: Observation) -> list[Violation]:
    """The scenario's own per-boundary expectations."""
    found = []
    for expect in obs.scenario.expectations:
        if expect.at != obs.case.occurrence or expect.fault != obs.case.fault:
            continue
        if expect.repair is not None:
            codes = [
                (e.data.get("error") or {}).get("code")
                for e in _appended(obs.crashed, obs.repaired)
                if e.type == "tool/result"
            ]
            if codes != list(expect.repair):
                found.append(
                    Violation(
                        "EXPECTATION_FAILED",
                        f"at {expect.at} the scenario expects repair {list(expect.repair)}, "
                        f"got {codes}",
                        {"expected": list(expect.repair), "actual": codes},
                    )
                )
        for tool, count in (expect.ledger or {}).items():
            actual = sum(1 for r in obs.final_ledger if r.get("tool") == tool)
            if actual != count:
                found.append(
                    Violation(
                        "EXPECTATION_FAILED",
                        f"at {expect.at} the scenario expects {count} {tool} effect(s) after "
                        f"resume, got {actual}",
                        {"tool": tool, "expected": count, "actual": actual},
                    )
                )
    return found


def check_case(obs: Observation) -> list[Violation]:
    """Every guarantee of a SIGKILL case (G1-G8) and the scenario's expectations."""
    return [
        *check_integrity(obs),
        *check_durability(obs),
        *check_repair(obs),
        *check_resume(obs),
        *check_expectations(obs),
    ]


def check_coverage(scenario: Scenario, reached: Sequence[str]) -> list[Violation]:
    """Every boundary the scenario declares appears among the reference's occurrences."""
    seen = set(reached)
    names = {occurrence.partition("#")[0] for occurrence in reached}
    found = []
    for declared in scenario.boundaries:
        hit = declared in seen if "#" in declared else declared in names
        if not hit:
            found.append(
                Violation(
                    "BOUNDARY_NOT_REACHED",
                    f"{scenario.name} declares {declared} but the fault-free run never reached it",
                    {"boundary": declared},
                )
            )
    return found


def _closers(step: int | None, turn: int | None, added: Sequence[LogEvent]) -> list[Violation]:
    """Repair closes the open step and ends the open turn as interrupted."""
    found = []
    if step is not None and not any(
        e.type == "step/end" and e.data.get("step") == step for e in added
    ):
        found.append(Violation(
            "REPAIR_MISCLASSIFIED", f"repair left step {step} of the crashed turn open",
            {"step": step},
        ))  # fmt: skip
    if turn is not None:
        ends = [e for e in added if e.type == "turn/end" and e.data.get("turn") == turn]
        kinds = [(e.data.get("reason") or {}).get("kind") for e in ends]
        if kinds != ["interrupted"]:
            found.append(Violation(
                "REPAIR_MISCLASSIFIED",
                f"repair should end turn {turn} once as interrupted; it wrote {kinds or 'none'}",
                {"turn": turn, "kinds": kinds},
            ))  # fmt: skip
    return found
