# The oracle of framework app cases (`--app`): what the gate saw the app's
# model, tools and checkpointer do, the world ledger, and the thread as the
# framework persisted it (at the kill and after the recovery), checked with
# the codes that mean the same for the reference runtime, plus one of their
# own: a call whose outcome was unknown run again without asking.
from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from faultlab.lab.oracle.codes import Violation
from faultlab.lab.process.records import LedgerRecord
from faultlab.lab.read.histories import History, classify_result, pairing_problems
from faultlab.lab.servers.records import GateRecord
from faultlab.scenario import Scenario

__all__ = ["AppObservation", "check_app"]


@dataclass(frozen=True, slots=True)
class AppObservation:
    """One case: `crash` and `resume` are the gate's records of the crashed
    process and of the recovery; `durable_at_kill` the persisted thread's
    messages at the kill (its pending writes' messages appended);
    `final` the persisted messages after the recovery; `style` how the
    app resumed (resume, resend, hook)."""

    scenario: Scenario
    crash: tuple[GateRecord, ...]
    resume: tuple[GateRecord, ...]
    ledger: tuple[LedgerRecord, ...]
    reference_ledger: tuple[LedgerRecord, ...]
    durable_at_kill: History
    final: History
    style: str
    resume_status: int
    resume_stderr: str = ""
    # Checkpoints more than one checkpoint of the final thread continues
    # from (`PersistedThread.forks`): two writers forked the chain.
    forks: tuple[str, ...] = ()


def _started(records: Sequence[GateRecord]) -> list[str]:
    return [str(r["callId"]) for r in records if r.get("boundary") == "tool/started"]


def _rejected(records: Sequence[GateRecord]) -> set[str]:
    """Calls the scripted tool rejected before their effect (`retry_if`)."""
    return {str(r["callId"]) for r in records
            if r.get("boundary") == "tool/returned" and r.get("rejected")}  # fmt: skip


def _rerun_safe(scenario: Scenario) -> set[str]:
    """The tools a re-run cannot harm, the same for every check: read-only,
    idempotent, or taking the call's idempotency key (a re-run of the same
    call applies no second effect)."""
    return {t.name for t in scenario.tools
            if t.read_only or t.idempotent or t.accepts_idempotency_key}  # fmt: skip


def _effects(ledger: Sequence[LedgerRecord], keyed: set[str]) -> Counter[str]:
    """Effects applied per tool; for a tool that takes an idempotency key,
    one per distinct key (a key applied once is one effect however often
    the call ran)."""
    seen: set[tuple[str, str]] = set()
    count: Counter[str] = Counter()
    for r in ledger:
        tool, key = str(r.get("tool")), r.get("key")
        if tool in keyed and isinstance(key, str):
            if (tool, key) in seen:
                continue
            seen.add((tool, key))
        count[tool] += 1
    return count


def check_app(o: AppObservation) -> list[Violation]:
    tools = {t.name: t for t in o.scenario.tools}
    # A lost intent is judged for every tool with an effect that is not
    # idempotent: after it, the model asks again under a new call id, so a
    # key (the call id) does not absorb it.
    risky = {n for n, t in tools.items() if not t.read_only and not t.idempotent}
    safe = _rerun_safe(o.scenario)
    out: list[Violation] = []
    tool_of = {str(r["callId"]): str(r.get("tool")) for r in (*o.crash, *o.resume)
               if r.get("boundary") == "tool/started"}  # fmt: skip
    durable_calls = {c.id for c in o.durable_at_kill.calls()}
    durable_results = o.durable_at_kill.results()
    started = _started(o.crash)
    for call in dict.fromkeys(started):
        if tool_of.get(call) in risky and call not in durable_calls:
            out.append(Violation("TOOL_INTENT_LOST",
                                 f"{call} ({tool_of[call]}) started, but no durable checkpoint "
                                 "or pending write held the call when the process died",
                                 {"callId": call}))  # fmt: skip
    unknown = [c for c in dict.fromkeys(started)
               if c not in durable_results and tool_of.get(c) not in safe]  # fmt: skip
    again = set(_started(o.resume))
    with_effect = {str(r.get("callId")) for r in o.ledger}
    for call in unknown:
        if call in again:
            # Judged by what the app could know (nothing durable said the
            # outcome), never by the world's luck: a call the tool rejected
            # before any effect ran again harmlessly this time only.
            harmless = call in _rejected(o.crash) and call not in with_effect
            out.append(Violation("UNKNOWN_OUTCOME_RERUN",
                                 f"{call} ({tool_of[call]}) had started and its result was not "
                                 "durable, and the app's next run ran it again without telling "
                                 "the model"
                                 + (" (the tool had rejected it before any effect, so no harm "
                                    "this time; the app could not know that)" if harmless
                                    else ""),
                                 {"callId": call, "effectApplied": not harmless}))  # fmt: skip
    keyed = {t.name for t in o.scenario.tools if t.accepts_idempotency_key}
    expected = _effects(o.reference_ledger, keyed)
    applied = _effects(o.ledger, keyed)
    for tool in sorted(set(tools) - (safe - keyed)):
        if applied[tool] > expected[tool]:
            out.append(Violation("SIDE_EFFECT_DUPLICATED",
                                 f"{tool} applied {applied[tool]} times; the fault-free run "
                                 f"applied it {expected[tool]} times", {"tool": tool}))  # fmt: skip
    rejected = [r for r in o.resume if r.get("fact") == "model/rejected"]
    problems = pairing_problems(o.final)
    if rejected or problems:
        why = rejected[0]["problems"][0] if rejected else problems[0]
        out.append(Violation("PROVIDER_INVALID_HISTORY",
                             f"the resumed thread breaks the model APIs' pairing rules: {why}"
                             + (f" (the model rejected {len(rejected)} request(s))"
                                if rejected else ""), {"rejected": len(rejected)}))  # fmt: skip
    if o.forks:
        out.append(Violation("SEQ_FORK",
                             f"the thread's checkpoint chain forked: {len(o.forks)} checkpoint(s) "
                             "have more than one successor (two writers continued the thread)",
                             {"forks": list(o.forks)}))  # fmt: skip
    if o.style in ("hook", "repair"):
        out.extend(_classification(o, set(started), safe))
    out.extend(_dispatch_after_failure(o.crash))
    waiting = _left_waiting(o.final) if o.resume_status == 0 else []
    if waiting:
        # A recovery that ends without answering the call the thread stops
        # on (ADK's resumption waits on it as on a long-running call): the
        # turn never gets its answer, and nothing will ever send the response.
        out.append(Violation("RESUME_FAILED",
                             "the recovery exited 0 with the thread ending on "
                             f"{', '.join(waiting)} unanswered: it stopped waiting for a "
                             "response nothing will send, and the turn never got its answer",
                             {"calls": waiting}))  # fmt: skip
    if o.resume_status != 0 and not rejected and not out:
        out.append(Violation("RESUME_FAILED", f"the recovery exited {o.resume_status}: "
                             f"{o.resume_stderr.strip().splitlines()[-1:]}"))  # fmt: skip
    return out


def _left_waiting(final: History) -> list[str]:
    """The calls the thread ends on without an answer: those of its last
    message other than a tool result, when that is the model's, that no
    result after it answers."""
    messages = final.messages
    last = next((i for i in range(len(messages) - 1, -1, -1) if messages[i].role != "tool"), None)
    if last is None or messages[last].role != "assistant":
        return []
    answered = {m.call_id for m in messages[last + 1:]}
    return [c.id for c in messages[last].calls if c.id not in answered]


def _dispatch_after_failure(crash: Sequence[GateRecord]) -> list[Violation]:
    """G9: nothing is dispatched on a checkpoint write that failed.  Counted
    from the failed write's start, not its failure: a framework that writes
    in the background (LangGraph's `async`) may start the tools that write
    schedules while it is still in flight, and those ran on a checkpoint
    that never became durable."""
    failed = next((r for r in crash if r.get("fact") == "app/ioerror"), None)
    if failed is None:
        return []
    boundary, _, n = str(failed.get("at")).partition("#")
    start = next((i for i, r in enumerate(crash)
                  if r.get("boundary") == boundary and str(r.get("n")) == n),
                 crash.index(failed))  # fmt: skip
    after = [r for r in crash[start + 1:] if r.get("boundary") in ("model/request", "tool/started")]
    if not after:
        return []
    return [Violation("DISPATCH_AFTER_FAILED_CHECKPOINT",
                      f"{failed.get('at')} failed, and the app went on to {after[0]['boundary']} "
                      "on the state it was writing", {"at": failed.get("at")})]


def _classification(o: AppObservation, started: set[str], safe: set[str]) -> list[Violation]:
    """G3 for an app that installs a repair (or uses its framework's): each
    call left unanswered at the kill is answered first by the repair, with
    'unknown' when its body had started (ground truth: the gate) and never
    with 'not started' then.  Running the call instead of answering it is
    right for a call that had not started when it then ran exactly once
    (a repair that knows it never started, LangGraph's `sync`), and for a
    tool a re-run cannot harm (the exemption UNKNOWN_OUTCOME_RERUN makes)."""
    out: list[Violation] = []
    answered = o.durable_at_kill.results()
    final = o.final.results()
    reran = Counter(_started(o.resume))
    names = {c.id: c.name for c in o.durable_at_kill.calls()}
    for call, call_name in names.items():
        if call in answered:
            continue
        found = classify_result(final.get(call))
        want: tuple[str, ...] = ("unknown",) if call in started else ("not-started", "unknown")
        once = reran[call] == 1 and call not in started
        if once or (reran[call] and call_name in safe):
            want += ("success", "error")
        if found not in want:
            out.append(Violation("REPAIR_MISCLASSIFIED",
                                 f"{call} ({call_name}) was answered as {found or 'nothing'}; "
                                 f"its body {'had' if call in started else 'had not'} started, "
                                 f"so the answer must be {' or '.join(want)}",
                                 {"callId": call, "found": found}))  # fmt: skip
    return out
