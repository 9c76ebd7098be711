# The oracle of a black-box case: every guarantee checked against what
# faultlab's own servers observed (the gate's records: each model request
# with the history it carried, each tool call the MCP tool server received,
# applied and answered) and the world ledger, never against what the agent
# says about itself.  The agent's own session log is read for the report
# only.  docs/guarantees.md, "Black-box agents", says which code means what.
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from faultlab.lab.oracle.codes import Violation
from faultlab.lab.process.records import LedgerRecord
from faultlab.lab.read.histories import Call, History, classify_result, pairing_problems
from faultlab.lab.servers.records import GateRecord
from faultlab.scenario import Scenario

__all__ = ["BlackboxObservation", "check_blackbox", "effect_counts"]

# Arguments that name an effect's idempotency key, not the effect itself.
_KEY_ARGUMENTS = ("idempotency_key", "idempotencyKey")
_REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>", re.DOTALL)


@dataclass(frozen=True, slots=True)
class BlackboxObservation:
    """One black-box case as the lab saw it.  `crash` holds the gate's
    records up to the kill (every agent run before it, and the killed one),
    `resume` those of the recovery runs after it; `completed` the final
    answers of the turns whose agent process exited 0 before the killed run
    started (the settled work).  `resume_status` is the first recovery
    run's exit status."""

    scenario: Scenario
    crash: tuple[GateRecord, ...]
    resume: tuple[GateRecord, ...]
    ledger: tuple[LedgerRecord, ...]
    reference_ledger: tuple[LedgerRecord, ...]
    resume_status: int
    completed: tuple[str, ...] = ()
    resume_stderr: str = ""


def _requests(records: Iterable[GateRecord]) -> list[History]:
    return [History.from_json(r.get("history") or ()) for r in records
            if r.get("boundary") == "model/request"]  # fmt: skip


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return _canonical(a) == _canonical(b)


def _canonical(arguments: dict[str, Any]) -> bytes:
    bare = {k: v for k, v in arguments.items() if k not in _KEY_ARGUMENTS}
    return orjson.dumps(bare, option=orjson.OPT_SORT_KEYS)


def _match(
    tool: str, arguments: dict[str, Any], calls: Sequence[Call], taken: set[str]
) -> Call | None:
    """The first call not yet matched for this tool and arguments (the MCP
    server never sees the model's call id): by arguments, else by name."""
    for exact in (True, False):
        for call in calls:
            if call.id in taken or call.name != tool:
                continue
            if not exact or _same(call.arguments, arguments):
                taken.add(call.id)
                return call
    return None


def effect_counts(ledger: Iterable[LedgerRecord]) -> Counter[tuple[str, bytes]]:
    """Applied effects per (tool, arguments without the idempotency key)."""
    return Counter((str(r.get("tool")), _canonical(dict(r.get("arguments") or {}))) for r in ledger)


def check_blackbox(obs: BlackboxObservation) -> list[Violation]:
    """Every black-box guarantee of one case (an empty list: all held)."""
    crash_requests = _requests(obs.crash)
    resumed = _requests(obs.resume)
    found: list[Violation] = []
    found += _effects(obs)
    if not resumed:
        return _no_resumed_request(obs) + found
    first = resumed[0]
    # Containment, not equality: an agent may merge the resume prompt into
    # the message before it, or wrap a prompt in reminders of its own.
    have = " \n".join(_texts(first.user_texts()))
    if crash_requests and not any(t in have for t in _texts(crash_requests[0].user_texts())):
        found.append(Violation(
            "SESSION_NOT_FOUND",
            "the resumed agent's first request holds none of the crashed session's user "
            "messages: it started a new session",
            {"resumedDigest": first.digest()},
        ))  # fmt: skip
        return found
    found += _requests_kept(crash_requests, first)
    found += _settled(obs.completed, first)
    found += _intent_and_classes(obs, crash_requests, first)
    found += _valid(resumed, _reissued(obs.crash + obs.resume))
    return found


def _texts(texts: Iterable[str]) -> list[str]:
    """The texts' own pieces: what lies between the `<system-reminder>`
    blocks agents wrap around a prompt (Claude Code, Qwen Code).  An agent
    rebuilds those on resume, in another order or with other content (Qwen
    Code 0.24.4 puts the date reminder after the first prompt), so the
    prompt is looked for, not the agent's wrapping of it."""
    return [piece.strip() for text in texts for piece in _REMINDER.split(text) if piece.strip()]


def _no_resumed_request(obs: BlackboxObservation) -> list[Violation]:
    if obs.resume_status != 0:
        tail = obs.resume_stderr.strip().splitlines()[-1:] or [""]
        return [Violation(
            "SESSION_NOT_FOUND",
            f"the resumed agent exited with status {obs.resume_status} before its first model "
            f"request: {tail[0][:200]}",
            {"status": obs.resume_status},
        )]  # fmt: skip
    return [Violation(
        "RESUME_FAILED",
        "the resumed agent exited 0 without sending the model any request",
        {"status": obs.resume_status},
    )]  # fmt: skip


def _requests_kept(crash_requests: Sequence[History], first: History) -> list[Violation]:
    """G1: the user messages of every request that reached the model are in
    the resumed history (a prompt the model saw and the agent forgot)."""
    have = " \n".join(_texts(first.user_texts()))
    for n, history in enumerate(crash_requests, start=1):
        for text in _texts(history.user_texts()):
            if text not in have:
                return [Violation(
                    "REQUEST_ENVELOPE_LOST",
                    f"model request {n} reached the model with the user message {text[:80]!r}, "
                    "which the resumed history does not hold",
                    {"request": n, "text": text[:200]},
                )]  # fmt: skip
    return []


def _settled(completed: Sequence[str], first: History) -> list[Violation]:
    """G4: the answers of turns that had ended (their process exited 0) survive."""
    said = " \n".join(m.text for m in first.messages if m.role == "assistant")
    return [
        Violation(
            "COMPLETED_TURN_LOST",
            f"the answer of a completed turn ({text[:80]!r}) is not in the resumed history",
            {"text": text[:200]},
        )
        for text in _texts(completed)
        if text not in said
    ][:1]


def _intent_and_classes(
    obs: BlackboxObservation, crash_requests: Sequence[History], first: History
) -> list[Violation]:
    """G2 and G3: every call the tool server received is in the resumed
    history, and each call whose result the model had not been sent before
    the kill is presented truthfully: an applied effect as an unknown
    outcome (or its real result), a call the server never received never
    as a success."""
    found: list[Violation] = []
    calls = first.calls()
    results = first.results()
    answered_before = {cid for h in crash_requests for cid in h.results()}
    taken: set[str] = set()
    replies = {r.get("callId"): r for r in obs.crash if r.get("boundary") == "tool/replied"}
    applied = {r.get("callId") for r in obs.crash
               if r.get("boundary") == "tool/applied" and r.get("applied", True)}  # fmt: skip
    for record in (r for r in obs.crash if r.get("boundary") == "tool/received"):
        tool, arguments = str(record.get("tool")), dict(record.get("arguments") or {})
        call = _match(tool, arguments, calls, taken)
        if call is None:
            found.append(Violation(
                "TOOL_INTENT_LOST",
                f"{tool} {_show(arguments)} reached the tool server before the kill, but the "
                "resumed history has no such call",
                {"tool": tool, "arguments": arguments, "callId": record.get("callId")},
            ))  # fmt: skip
            continue
        if call.id in answered_before or call.id not in results:
            continue  # the model saw its result, or G7 reports the dangling call
        result = results[call.id]
        shown = classify_result(result)
        # The real result, as the tool server sent it (an agent may wrap it:
        # Codex adds "Wall time: ...\nOutput:\n"): the truth, not a claim.
        reply = replies.get(record.get("callId"))
        sent = str(reply.get("text") or "").strip() if reply is not None else ""
        real = bool(sent) and sent in result.text
        if record.get("callId") in applied and shown != "unknown" and not real:
            found.append(Violation(
                "REPAIR_MISCLASSIFIED",
                f"{tool} {_show(arguments)} was applied before the kill, but the resumed "
                f"history presents it as {shown}: {result.text[:120]!r}",
                {"tool": tool, "callId": call.id, "presented": shown, "applied": True},
            ))  # fmt: skip
    for call in calls:
        if call.id in taken or call.id in answered_before or call.id not in results:
            continue
        if classify_result(results[call.id]) == "success":
            found.append(Violation(
                "REPAIR_MISCLASSIFIED",
                f"{call.name} {_show(call.arguments)} never reached the tool server, but the "
                f"resumed history presents it as a success: {results[call.id].text[:120]!r}",
                {"tool": call.name, "callId": call.id, "presented": "success", "applied": False},
            ))  # fmt: skip
    return found


def _reissued(records: Iterable[GateRecord]) -> frozenset[str]:
    """Call ids the model server handed out in more than one answer: an
    agent that holds one twice repeats the server, so that reuse is not the
    agent's (the server gives every answer fresh ids; this keeps a lapse of
    faultlab's own from becoming a false PROVIDER_INVALID_HISTORY)."""
    given = Counter(str(call.get("id")) for r in records if r.get("fact") == "model/response"
                    for call in r.get("calls") or () if isinstance(call, dict))  # fmt: skip
    return frozenset(cid for cid, count in given.items() if count > 1)


def _valid(resumed: Sequence[History], reissued: frozenset[str]) -> list[Violation]:
    """G7: every request the resumed agent sent obeys the pairing rules (a
    call id it holds twice counts only if the server handed it out once)."""
    for n, history in enumerate(resumed, start=1):
        problems = pairing_problems(history, reissued=reissued)
        if problems:
            return [Violation(
                "PROVIDER_INVALID_HISTORY",
                f"resumed model request {n}: {problems[0]} (a model API rejects it with a 400)",
                {"request": n, "problems": problems[:5]},
            )]  # fmt: skip
    return []


def _effects(obs: BlackboxObservation) -> list[Violation]:
    """G6: no non-idempotent effect applied more often than the fault-free run did."""
    unsafe = {t.name for t in obs.scenario.tools if t.effect != "none" and not t.idempotent}
    want = effect_counts(obs.reference_ledger)
    found = []
    for (tool, arguments), count in sorted(effect_counts(obs.ledger).items()):
        if tool in unsafe and count > want.get((tool, arguments), 0):
            found.append(Violation(
                "SIDE_EFFECT_DUPLICATED",
                f"{tool} {arguments.decode()} applied {count} times after the crash; "
                f"{want.get((tool, arguments), 0)} in the run without it",
                {"tool": tool, "count": count, "expected": want.get((tool, arguments), 0)},
            ))  # fmt: skip
    return found


def _show(arguments: dict[str, Any]) -> str:
    return orjson.dumps(arguments, option=orjson.OPT_SORT_KEYS).decode()[:120]
