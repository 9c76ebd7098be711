# The guarantees only the live faults can break, decided from the probe trace
# of the faulted child and what it left behind:
#   G9 fail-closed      no model call, tool body or request after a failed
#                       checkpoint (io-error), no tool body after a
#                       cancellation that landed in its checkpoint
#                       (cancel-in-checkpoint: ABORTED_BEFORE_DISPATCH)
#   G10 graceful close  a graceful stop persists its real closing events
#                       (sigterm; the ACP drive's cancel too)
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from faultlab.lab.oracle.checks import Observation
from faultlab.lab.oracle.claims import unanswered_calls
from faultlab.lab.oracle.codes import Violation
from faultlab.lab.oracle.expected import expected_repair
from faultlab.lab.process.spawn import ChildExit

__all__ = [
    "check_aborted",
    "check_fail_closed",
    "check_graceful_close",
    "request_after_post_step",
]


def _passed_after(trace: tuple[Mapping[str, Any], ...], start: int) -> list[Mapping[str, Any]]:
    return [m for m in trace[start:] if "boundary" in m]


def check_fail_closed(obs: Observation, status: ChildExit | None) -> list[Violation]:
    """G9: after a failed flush, nothing is dispatched until a flush succeeds."""
    found = []
    failed_at: int | None = None
    for message in obs.trace:
        if message.get("fact") == "flush":
            if message.get("ok"):
                failed_at = None
            elif failed_at is None:
                failed_at = message.get("first", -1)
            continue
        if failed_at is None or "boundary" not in message:
            continue
        dispatched = message["boundary"] == "request/durable" or (
            message["boundary"] == "tool/durable" and message.get("parentCallId") is None
        )
        if dispatched:
            what = message.get("requestId") or message.get("callId")
            found.append(Violation(
                "DISPATCH_AFTER_FAILED_CHECKPOINT",
                f"{message['boundary']} ({what}) was reached after a flush failed and before "
                "any flush succeeded",
                {"boundary": message["boundary"], "id": what, "failedFrom": failed_at},
            ))  # fmt: skip
    if obs.case.occurrence.startswith("step/logged#"):
        reported = {v.evidence.get("id") for v in found}
        found += [
            v for v in request_after_post_step(obs.trace) if v.evidence["id"] not in reported
        ]
    if not any(m.get("fact") == "flush" and m.get("ok") is False for m in obs.trace):
        found.append(Violation(
            "FAULT_NOT_INJECTED", "no flush failed after the io-error was armed",
        ))  # fmt: skip
    if status is not None and status.returncode < 0:
        found.append(Violation(
            "DISPATCH_AFTER_FAILED_CHECKPOINT",
            f"the target died of signal {-status.returncode} after the failed flush instead "
            "of stopping cleanly", {"status": status.returncode},
        ))  # fmt: skip
    return found


def request_after_post_step(trace: tuple[Mapping[str, Any], ...]) -> list[Violation]:
    """G9 for the post-step checkpoint: parked at `step/logged`, the next flush
    is the step's checkpoint; once it fails, no request of the same turn may
    reach the model, even after a later flush succeeds (the turn must stop)."""
    parked = next((i for i, m in enumerate(trace) if m.get("parked")), None)
    if parked is None:
        return []
    found = []
    failed: int | None = None
    for message in trace[parked + 1 :]:
        if failed is None:
            if message.get("boundary") == "turn/logged":
                return []  # no flush between the step and the turn's end: no such checkpoint
            if message.get("fact") == "flush":
                if message.get("ok") is not False:
                    return []  # the step's checkpoint succeeded: the fault hit a later flush
                failed = message.get("first", -1)
            continue
        if message.get("boundary") == "turn/logged":
            break
        if message.get("boundary") == "request/durable":
            what = message.get("requestId")
            found.append(Violation(
                "DISPATCH_AFTER_FAILED_CHECKPOINT",
                f"request/durable ({what}) was reached in the same turn after the post-step "
                "checkpoint failed (the turn must stop before another model request)",
                {"boundary": "request/durable", "id": what, "failedFrom": failed},
            ))  # fmt: skip
    return found


def check_graceful_close(obs: Observation, status: ChildExit | None) -> list[Violation]:
    """G10: a graceful stop leaves a closed, durable turn and nothing to repair."""
    found = []
    if status is None or status.returncode < 0:
        found.append(Violation(
            "GRACEFUL_CLOSE_MISSING",
            "the target did not exit by itself after SIGTERM "
            f"(status {status.returncode if status else None})",
        ))  # fmt: skip
    events = obs.crashed.events
    repair = expected_repair(events, {s.name: s for s in obs.scenario.tools})
    if obs.crashed.last_turn_open or repair.results:
        found.append(Violation(
            "GRACEFUL_CLOSE_MISSING",
            "after SIGTERM the log's last turn is still open"
            + (f" with {len(repair.results)} unanswered call(s)" if repair.results else ""),
            {"openTurn": repair.close_turn, "unanswered": [r.call_id for r in repair.results]},
        ))  # fmt: skip
    # A call (top-level or nested) with no result that the repair above would
    # not answer, because its turn is closed: the stop cut work short without
    # saying how it ended.
    repaired = {r.call_id for r in repair.results}
    dangling = [c for c in unanswered_calls(events) if c not in repaired]
    if dangling:
        found.append(Violation(
            "GRACEFUL_CLOSE_MISSING",
            f"after SIGTERM {len(dangling)} call(s) were left unanswered that no crash repair "
            f"would answer ({', '.join(dangling)})",
            {"openTurn": None, "unanswered": dangling},
        ))  # fmt: skip
    ends = [e for e in events if e.type == "turn/end"]
    if ends and not obs.crashed.last_turn_open:
        kind = (ends[-1].data.get("reason") or {}).get("kind")
        if kind not in ("cancelled", "completed"):
            found.append(Violation(
                "GRACEFUL_CLOSE_MISSING",
                f"the turn stopped by SIGTERM ended {kind!r}, not 'cancelled'", {"kind": kind},
            ))  # fmt: skip
    return found


def check_aborted(call_id: str) -> Callable[[Observation, ChildExit | None], list[Violation]]:
    def check(obs: Observation, status: ChildExit | None) -> list[Violation]:
        found = check_graceful_close(obs, status)
        parked = next(i for i, m in enumerate(obs.trace) if m.get("parked"))
        for message in _passed_after(obs.trace, parked + 1):
            if message["boundary"] == "tool/durable" and message.get("callId") == call_id:
                found.append(Violation(
                    "DISPATCH_AFTER_CANCEL",
                    f"the body of {call_id} started although the turn was cancelled while its "
                    "checkpoint was pending", {"callId": call_id},
                ))  # fmt: skip
        results = [
            e
            for e in obs.crashed.events
            if e.type == "tool/result" and e.data.get("callId") == call_id
        ]
        code = ((results[0].data.get("error") or {}).get("code")) if results else None
        if code != "ABORTED_BEFORE_DISPATCH":
            found.append(Violation(
                "DISPATCH_AFTER_CANCEL",
                f"{call_id} should be answered ABORTED_BEFORE_DISPATCH; got {code}",
                {"callId": call_id, "code": code},
            ))  # fmt: skip
        return found

    return check
