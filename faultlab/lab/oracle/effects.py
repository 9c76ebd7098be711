# G6's effect rule: what the recovered run applied to the world (the world
# ledger, which the lab reads itself) against what it was entitled to apply.
# Its own module: the rule needs a paragraph, and checks.py holds the rest.
from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import orjson

from faultlab.lab.oracle.codes import Violation
from faultlab.lab.process.records import LedgerRecord
from faultlab.lab.read.view import LogView
from faultlab.scenario import Scenario

__all__ = ["duplicated_effects"]


def _effect_key(record: LedgerRecord) -> tuple[str, bytes]:
    arguments = orjson.dumps(record.get("arguments"), option=orjson.OPT_SORT_KEYS)
    return str(record.get("tool")), arguments


def duplicated_effects(
    scenario: Scenario, crashed: LogView, reference_ledger: Sequence[LedgerRecord],
    final_ledger: Sequence[LedgerRecord],
) -> list[Violation]:  # fmt: skip
    """G6 effects: what the recovered run applied against what it was entitled
    to apply, not against the fault-free run's count (a crash legitimately
    changes a tool result, and a scripted model may then take a branch the
    fault-free run never took and apply an effect that run never applied).
    For non-idempotent ledger tools: (1) one call id is applied at most once;
    (2) after a call's outcome became unknown (a durable `tool/call` without a
    result in the crashed log) and its effect had been applied, calls issued
    after the crash apply the same effect (tool and arguments) no more often
    than the fault-free run's calls past that point did."""
    once_only = {s.name for s in scenario.tools if s.effect == "ledger" and not s.idempotent}
    records = [r for r in final_ledger if r.get("tool") in once_only]
    found = []
    # The evidence says what was applied and how often against the fault-free
    # run, so that a person reads the harm without opening the ledger.
    in_final = Counter(_effect_key(r) for r in records)
    in_reference = Counter(_effect_key(r) for r in reference_ledger)
    per_call = Counter(str(r.get("callId")) for r in records)
    for call_id, count in sorted(per_call.items()):
        if count > 1:
            record = next(r for r in records if str(r.get("callId")) == call_id)
            tool = str(record.get("tool"))
            found.append(Violation(
                "SIDE_EFFECT_DUPLICATED",
                f"call {call_id} ({tool}) was applied {count} times: one call applies its "
                "effect at most once",
                {"tool": tool, "callId": call_id, "count": count,
                 "arguments": record.get("arguments"),
                 "referenceCount": in_reference[_effect_key(record)]},
            ))  # fmt: skip
    events = crashed.events
    logged = {str(e.data.get("callId")) for e in events if e.type == "tool/call"}
    answered = {str(e.data.get("callId")) for e in events if e.type == "tool/result"}
    unknown = logged - answered
    applied_unknown = {_effect_key(r): str(r.get("callId")) for r in records
                       if str(r.get("callId")) in unknown}  # fmt: skip
    # The rest of the fault-free run (calls the crashed log had not made yet)
    # may apply the same effect on purpose (a second charge in a later turn):
    # that many post-crash applications are entitled.
    entitled = Counter(
        _effect_key(r) for r in reference_ledger
        if r.get("tool") in once_only and str(r.get("callId")) not in logged
    )  # fmt: skip
    after: Counter[tuple[str, bytes]] = Counter()
    for record in records:
        call_id, key = str(record.get("callId")), _effect_key(record)
        first = applied_unknown.get(key)
        if first is None or call_id in logged:
            continue  # not a repeat, or a call the crashed run had already made
        after[key] += 1
        if after[key] <= entitled[key]:
            continue
        tool, arguments = key
        found.append(Violation(
            "SIDE_EFFECT_DUPLICATED",
            f"{tool}{arguments.decode()} was applied again by {call_id} after the crash, "
            f"although {first} had applied it and its outcome was unknown",
            {"tool": tool, "callId": call_id, "unknownCallId": first,
             "arguments": record.get("arguments"), "count": in_final[key],
             "referenceCount": in_reference[key]},
        ))  # fmt: skip
    return found
