# The faults beyond SIGKILL that need a live child: where each is injected
# (which boundary occurrences make cases), how (what the lab does while the
# child is parked), and the guarantees only they can break:
#   io-error              the next flush fails (EIO)          G9 fail-closed
#   cancel-in-checkpoint  SIGTERM while a tool checkpoint is pending: the
#                         call is ABORTED_BEFORE_DISPATCH, its body never runs
#   sigterm               graceful stop                       G10 graceful close
#   crash-in-repair       SIGKILL of the resumed child at each write of its
#                         repair; the next load converges     G8
#   second-writer         a second writer on the live session is refused and
#                         the log never forks                 SEQ_FORK
# power-loss and torn-write are derived offline (faultlab/lab/powerloss.py).
from __future__ import annotations

import dataclasses
import shutil
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from faultlab.lab.expected import expected_repair
from faultlab.lab.logread import LogView
from faultlab.lab.model import Case, CaseResult, Violation
from faultlab.lab.oracle import Observation, _key
from faultlab.lab.runner import (
    LabOptions,
    Reference,
    _child,
    _run_to_exit,
    run_case,
    slug,
    store_of,
)
from faultlab.lab.spawn import Child, ChildExit, ChildHung
from faultlab.lab.target import session_files

__all__ = ["LIVE_FAULTS", "plan_fault_cases", "run_fault_case"]

# fault -> the boundaries whose every occurrence is a case
_WHERE: dict[str, tuple[str, ...]] = {
    "io-error": ("request/logged", "tool/logged", "step/logged", "turn/logged"),
    "cancel-in-checkpoint": ("tool/logged",),
    "sigterm": (
        "turn/started", "request/logged", "request/durable", "model/chunk",
        "assistant/recorded", "tool/logged", "tool/durable", "tool/effect", "tool/returned",
        "step/logged", "step/durable", "turn/logged", "turn/durable",
    ),
    "crash-in-repair": ("request/durable", "tool/durable", "tool/effect"),
    "second-writer": ("request/durable", "tool/durable"),
}  # fmt: skip
LIVE_FAULTS = tuple(_WHERE)
# Where the resumed child is killed while it commits its repair.
_REPAIR_POINTS = ("repair/logged#1", "flush/written#1", "repair/durable#1")


def plan_fault_cases(reference: Reference, fault: str) -> list[Case]:
    """Every occurrence where `fault` applies, in trace order."""
    wanted = _WHERE[fault]
    cases = []
    for message in reference.boundaries:
        if message["boundary"] not in wanted:
            continue
        if message.get("parentCallId") is not None:
            continue  # nested calls have no checkpoint of their own
        cases.append(Case(reference.scenario_path, f"{message['boundary']}#{message['n']}", fault))
    return cases


def _passed_after(trace: tuple[dict[str, Any], ...], start: int) -> list[dict[str, Any]]:
    return [m for m in trace[start:] if "boundary" in m]


def _fail_closed(obs: Observation, status: ChildExit | None) -> list[Violation]:
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
            v for v in _request_after_post_step(obs.trace) if v.evidence["id"] not in reported
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


def _request_after_post_step(trace: tuple[dict[str, Any], ...]) -> list[Violation]:
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


def _graceful(obs: Observation, status: ChildExit | None) -> list[Violation]:
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
    ends = [e for e in events if e.type == "turn/end"]
    if ends and not obs.crashed.last_turn_open:
        kind = (ends[-1].data.get("reason") or {}).get("kind")
        if kind not in ("cancelled", "completed"):
            found.append(Violation(
                "GRACEFUL_CLOSE_MISSING",
                f"the turn stopped by SIGTERM ended {kind!r}, not 'cancelled'", {"kind": kind},
            ))  # fmt: skip
    return found


def _aborted(call_id: str) -> Callable[[Observation, ChildExit | None], list[Violation]]:
    def check(obs: Observation, status: ChildExit | None) -> list[Violation]:
        found = _graceful(obs, status)
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


def _signal(signum: int) -> Callable[[Child], bool]:
    def act(child: Child) -> bool:
        child.signal(signum)
        return False

    return act


def _io_error(child: Child) -> bool:
    child.reply("fail-next-flush", op="write", errno="EIO")
    return False


def run_fault_case(case: Case, reference: Reference, options: LabOptions) -> CaseResult:
    if case.fault == "io-error":
        return run_case(case, reference, options, act=_io_error, checks=_fail_closed)
    if case.fault == "sigterm":
        return run_case(case, reference, options, act=_signal(signal.SIGTERM), checks=_graceful)
    if case.fault == "cancel-in-checkpoint":
        message = _occurrence(reference, case.occurrence)
        act = _signal(signal.SIGTERM)
        return run_case(case, reference, options, act=act, checks=_aborted(message["callId"]))
    if case.fault == "crash-in-repair":
        return _crash_in_repair(case, reference, options)
    if case.fault == "second-writer":
        return _second_writer(case, reference, options)
    raise ValueError(f"not a live fault: {case.fault}")


def _occurrence(reference: Reference, occurrence: str) -> dict[str, Any]:
    name, _, n = occurrence.partition("#")
    return next(m for m in reference.boundaries
                if m["boundary"] == name and m["n"] == int(n))  # fmt: skip


def _normal(view: LogView) -> list[tuple[int, str, bytes]]:
    return [_key(event) for event in view.events]  # the oracle's event identity


def _crash_in_repair(case: Case, reference: Reference, options: LabOptions) -> CaseResult:
    """Kill at the occurrence, then kill the resumed child at every write of its
    repair; every interrupted repair must converge on the uninterrupted one."""
    started = time.monotonic()
    # Its own work directory: the real [sigkill] case of this occurrence may
    # be running at the same time under --jobs.
    base_options = dataclasses.replace(options, workdir=options.workdir / "repair-base")
    base = run_case(Case(case.scenario, case.occurrence, "sigkill"), reference, base_options)
    if base.verdict != "pass" or "crashed" not in base.artifacts:
        return CaseResult(case, base.verdict, base.violations, time.monotonic() - started,
                          base.detail, base.artifacts)  # fmt: skip
    where = options.workdir / "cases" / slug(case.id)
    store = store_of(options, reference.scenario)
    crashed = Path(base.artifacts["crashed"]).read_bytes()
    uninterrupted = store.parse(Path(base.artifacts["repaired"]).read_bytes(), "repaired")
    violations: list[Violation] = []
    for point in _REPAIR_POINTS:
        session = where / point.replace("/", "_").replace("#", "_") / "session"
        shutil.rmtree(session.parent, ignore_errors=True)
        session.mkdir(parents=True)
        store.put(session, crashed)
        _copy_ledger(Path(base.artifacts["dir"]) / "session", session)
        killer = _child(options, case.scenario, session, "repair", "killed", armed=point)
        try:
            with killer:
                if killer.run_until_parked_or_exit(options.timeout) is None:
                    killer.wait(options.timeout)
                    continue  # this repair has no such write: nothing to interrupt
                killer.kill()
                killer.wait(options.timeout)
            _run_to_exit(_child(options, case.scenario, session, "repair", "again"),
                         options.timeout)  # fmt: skip
        except ChildHung as hung:
            violations.append(Violation("CHILD_HUNG", f"repair killed at {point}: {hung}"))
            continue
        converged = store.view(session)
        if _normal(converged) != _normal(uninterrupted):
            violations.append(Violation(
                "REPAIR_NOT_IDEMPOTENT",
                f"a repair killed at {point} converged on {len(converged.events)} event(s), "
                f"not on the {len(uninterrupted.events)} of an uninterrupted repair",
                {"killedAt": point, "events": len(converged.events),
                 "expected": len(uninterrupted.events)},
            ))  # fmt: skip
    return CaseResult(case, "fail" if violations else "pass", tuple(violations),
                      time.monotonic() - started, "", {"dir": str(where)})  # fmt: skip


def _copy_ledger(source: Path, session: Path) -> None:
    _log, ledger = session_files(source)
    if ledger.exists():
        shutil.copy2(ledger, session / ledger.name)


def _second_writer(case: Case, reference: Reference, options: LabOptions) -> CaseResult:
    """While the target is parked mid-run, a second writer opens the session."""
    started = time.monotonic()
    where = options.workdir / "cases" / slug(case.id)
    shutil.rmtree(where, ignore_errors=True)
    session = where / "session"
    store = store_of(options, reference.scenario)
    violations: list[Violation] = []
    first = _child(options, case.scenario, session, "run", "first", armed=case.occurrence)
    try:
        with first:
            if first.run_until_parked_or_exit(options.timeout) is None:
                first.wait(options.timeout)
                return CaseResult(case, "drift", (Violation("DRIFT", "never parked"),))
            before = store.take(session)
            second = _child(options, case.scenario, session, "resume", "second")
            status = _run_to_exit(second, options.timeout)
            after = store.take(session)
            if status.returncode == 0 or after != before:
                violations.append(Violation(
                    "SEQ_FORK",
                    f"a second writer on the live session exited {status.returncode} and "
                    + ("changed the log" if after != before else "was not refused"),
                    {"status": status.returncode, "changed": after != before},
                ))  # fmt: skip
            first.reply("continue")
            while first.run_until_parked_or_exit(options.timeout) is not None:
                first.reply("continue")
            done = first.wait(options.timeout)
    except ChildHung as hung:
        return CaseResult(case, "hung", (Violation("CHILD_HUNG", str(hung)),),
                          time.monotonic() - started)  # fmt: skip
    final = store.view(session)
    forked = [p for p in final.problems if p.code in ("SEQ_GAP", "SEQ_DUPLICATE")]
    if forked or _normal(final) != _normal(reference.log):
        violations.append(Violation(
            "SEQ_FORK",
            "after a second writer, the session log is not the one a single writer writes"
            + (f": {forked[0].message}" if forked else ""),
            {"problems": [p.message for p in forked]},
        ))  # fmt: skip
    if done.returncode != 0:
        violations.append(Violation(
            "SEQ_FORK", f"the first writer exited {done.returncode} after the second one tried",
            {"status": done.returncode},
        ))  # fmt: skip
    return CaseResult(case, "fail" if violations else "pass", tuple(violations),
                      time.monotonic() - started, "", {"dir": str(where)})  # fmt: skip
