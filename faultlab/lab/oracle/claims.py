# Claims the oracle holds a target to beyond its flush facts (issue 19, item 4):
#   G4   a `turn/durable` the child went past claims its turn's `turn/end`
#        is durable, a `step/durable` its step's `step/end`;
#   G10  a graceful stop leaves no call unanswered, open turn or not;
#   G5   a writer that cuts a torn tail (or damage after the last completed
#        turn) off the log keeps the cut bytes in a cut file (docs/log-format.md
#        7.3), so what was on disk is never lost by the cut itself; and keeps
#        them durably before the cut: after a power loss at any moment of the
#        recovery, the bytes are still in the log or in a durable cut file;
#   G4   a `repair/durable` the repair child went past claims its repair's
#        events are durable (issue 30: the recovery's claims, like the run's).
# Kept apart from checks.py: each takes plain values (a trace, events, bytes),
# so a hand-built input shows it failing without a process.
from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from faultlab.lab.oracle.codes import Violation
from faultlab.lab.read.view import LogEvent, LogView
from faultlab.userfiles import read_target

__all__ = [
    "closed_turns_lost",
    "cut_files_of",
    "cut_tail_lost",
    "repair_lost",
    "settled_steps_lost",
    "tail_not_kept",
    "unanswered_calls",
]


def _passed(trace: Sequence[Mapping[str, Any]], boundary: str) -> list[Mapping[str, Any]]:
    # Occurrences the child went past: the parked one never ran on.
    return [m for m in trace if m.get("boundary") == boundary and not m.get("parked")]


def closed_turns_lost(
    trace: Sequence[Mapping[str, Any]], events: Sequence[LogEvent]
) -> list[Violation]:
    """G4 for the turn-end checkpoint: a `turn/durable` the child went past
    claims its turn's `turn/end` is durable, flush facts or not."""
    ended = {e.data.get("turn") for e in events if e.type == "turn/end"}
    found = []
    for message in _passed(trace, "turn/durable"):
        turn = message.get("turn")
        if turn not in ended:
            found.append(
                Violation(
                    "COMPLETED_TURN_LOST",
                    f"turn {turn} was reported durable (turn/durable) but its turn/end was not "
                    "in the crashed log",
                    {"turn": turn, "lostTurnEnds": []},
                )
            )
    return found


def settled_steps_lost(
    trace: Sequence[Mapping[str, Any]], events: Sequence[LogEvent]
) -> list[Violation]:
    """G4 for the post-step checkpoint: every `step/durable` the child went past
    (not the parked one) needs its `step/end` (same `turn` and `step`) in the
    crashed log."""
    ended = {(e.data.get("turn"), e.data.get("step")) for e in events if e.type == "step/end"}
    found = []
    for message in _passed(trace, "step/durable"):
        turn, step = message.get("turn"), message.get("step")
        if (turn, step) not in ended:
            found.append(Violation(
                "SETTLED_STEP_LOST",
                f"step {step} of turn {turn} was reported durable (step/durable) but its "
                "step/end was not in the crashed log",
                {"turn": turn, "step": step, "lostTurnEnds": []},
            ))  # fmt: skip
    return found


def _asked(data: Mapping[str, Any]) -> list[str]:
    """The ids of an assistant message's tool-call blocks."""
    message = data.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, list):
        return []
    return [
        b["id"] for b in content
        if isinstance(b, dict) and b.get("type") == "tool-call" and isinstance(b.get("id"), str)
    ]  # fmt: skip


def unanswered_calls(events: Sequence[LogEvent]) -> list[str]:
    """Every call the log asked for (a tool-call block of an assistant message,
    or a `tool/call`, nested ones included) with no `tool/result`, in log order."""
    answered = {e.data.get("callId") for e in events if e.type == "tool/result"}
    found: list[str] = []
    for event in events:
        if event.type == "assistant/message":
            ids = _asked(event.data)
        elif event.type == "tool/call" and isinstance(event.data.get("callId"), str):
            ids = [event.data["callId"]]
        else:
            continue
        found += [i for i in ids if i not in answered and i not in found]
    return found


def cut_files_of(session: Path, log_name: str) -> dict[str, bytes]:
    """The cut files beside a JSONL log (`<log>.cut-<offset>[.<k>]`), by name."""
    found = {}
    for path in sorted(session.glob(f"{log_name}.cut-*")):
        data = read_target(path, what="cut file")  # bounded, regular, no link
        if data is not None:
            found[path.name] = data
    return found


def cut_tail_lost(
    crashed: LogView, crashed_bytes: bytes, cut_files: Mapping[str, bytes], log_name: str
) -> list[Violation]:
    """G5 (docs/log-format.md 7.3): the crashed log had bytes the reader cuts
    (`torn_bytes`); after the target opened it, a cut file for that offset must
    hold exactly those bytes."""
    if crashed.header is None or crashed.torn_bytes <= 0:
        return []
    tail = crashed_bytes[crashed.valid_size :]
    stem = f"{log_name}.cut-{crashed.valid_size}"
    kept = [n for n, data in cut_files.items() if (n == stem or n.startswith(stem + "."))
            and data == tail]  # fmt: skip
    if kept:
        return []
    return [Violation(
        "CUT_TAIL_LOST",
        f"the crashed log had {len(tail)} byte(s) to cut at byte {crashed.valid_size}, but no "
        f"cut file {stem}[.k] beside the log holds them after the repair",
        {"offset": crashed.valid_size, "bytes": len(tail), "cutFiles": sorted(cut_files)},
    )]  # fmt: skip


def repair_lost(trace: Sequence[Mapping[str, Any]], events: Sequence[LogEvent]) -> list[Violation]:
    """G4 for the repair's commit: every `repair/durable` the child went past
    (`first`, `count`: the repair's seqs) needs those events in the log."""
    have = {e.seq for e in events}
    found = []
    for message in _passed(trace, "repair/durable"):
        first, count = message.get("first"), message.get("count")
        if not isinstance(first, int) or not isinstance(count, int):
            continue
        missing = [seq for seq in range(first, first + count) if seq not in have]
        if missing:
            found.append(Violation(
                "REPAIR_LOST",
                f"the repair of seqs {first}..{first + count - 1} was reported durable "
                f"(repair/durable) but seq {missing[0]} was not in the log",
                {"first": first, "count": count, "missing": missing},
            ))  # fmt: skip
    return found


def tail_not_kept(
    files: Mapping[str, bytes], log: str, tail: bytes, offset: int
) -> list[Violation]:
    """G5 at one moment of a recovery: the bytes a load cuts at byte `offset`
    of `log` (`tail`) are durable in the log there, or in full in a durable
    cut file beside it (`<log>.cut-<offset>[.<k>]`). `files`: the durable
    files (real path -> durable bytes)."""
    if not tail or files.get(log, b"")[offset : offset + len(tail)] == tail:
        return []
    stem = f"{log}.cut-{offset}"
    if any((n == stem or n.startswith(stem + ".")) and data == tail
           for n, data in files.items()):  # fmt: skip
        return []
    kept = sorted(os.path.basename(n) for n in files if n.startswith(f"{log}.cut-"))
    return [Violation(
        "CUT_TAIL_LOST",
        f"the {len(tail)} byte(s) the load cuts at byte {offset} were neither durable in the "
        f"log nor in a durable cut file {os.path.basename(stem)}[.k]",
        {"offset": offset, "bytes": len(tail), "durableCutFiles": kept},
    )]  # fmt: skip
