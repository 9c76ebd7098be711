# The pairing rules model APIs enforce on a conversation (guarantee G7,
# `PROVIDER_INVALID_HISTORY`), checked on the events of a session log: every
# tool call answered exactly once, right after its assistant message, no orphan
# results, no empty assistant messages, unique call ids, well-formed turns.
# This module owns only those rules; it reads events, never files.
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from faultlab.lab.read.view import LogEvent

__all__ = ["PROVIDER_INVALID_HISTORY", "HistoryProblem", "check_history"]

PROVIDER_INVALID_HISTORY = "PROVIDER_INVALID_HISTORY"

_Report = Callable[[int, str], None]


@dataclass(frozen=True, slots=True)
class HistoryProblem:
    """One violation: a one-line explanation and the seq where it shows."""

    message: str
    seq: int


@dataclass(slots=True)
class _Call:
    call_id: str
    message_seq: int
    answers: list[int] = field(default_factory=list)


@dataclass(slots=True)
class _Asked:
    """The most recent assistant message with tool calls."""

    seq: int
    interrupted_by: int | None = None  # first model-visible message after it


def _blocks(data: dict[str, Any]) -> list[dict[str, Any]]:
    message = data.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, list):
        return []
    return [block for block in content if isinstance(block, dict)]


def check_history(
    events: Sequence[LogEvent], *, require_closed: bool = True
) -> list[HistoryProblem]:
    """Every violation of the pairing rules, ordered by seq.

    Model-visible messages are ``user/message``, ``assistant/message`` and
    top-level ``tool/result`` events (no ``parentCallId``); nested results and
    all other events are not messages.  Calls must be answered even when the
    last turn is open; ``require_closed`` only decides whether an open last
    turn is itself a violation.
    """
    problems: list[HistoryProblem] = []
    calls: list[_Call] = []
    latest: dict[str, _Call] = {}  # call id -> its latest request
    asked: _Asked | None = None
    open_turn: int | None = None

    def report(seq: int, message: str) -> None:
        problems.append(HistoryProblem(message, seq))

    for event in events:
        kind, seq, data = event.type, event.seq, event.data
        if kind == "turn/start":
            if open_turn is not None:
                report(
                    seq,
                    f"turn/start at seq {seq} opens a turn while the turn started at "
                    f"seq {open_turn} is still open",
                )
            open_turn = seq
        elif kind == "turn/end":
            if open_turn is None:
                report(seq, f"turn/end at seq {seq} closes no open turn")
            open_turn = None
        elif kind == "user/message":
            if asked is not None and asked.interrupted_by is None:
                asked.interrupted_by = seq
        elif kind == "assistant/message":
            if asked is not None and asked.interrupted_by is None:
                asked.interrupted_by = seq
            if _assistant_message(seq, data, calls, latest, report):
                asked = _Asked(seq)
        elif kind == "tool/result" and data.get("parentCallId") is None:
            _tool_result(seq, data, latest, asked, report)

    for call in calls:
        if not call.answers:
            report(
                call.message_seq,
                f"tool call {call.call_id} of the assistant message at seq "
                f"{call.message_seq} is never answered",
            )
        elif len(call.answers) > 1:
            seqs = ", ".join(str(s) for s in call.answers)
            report(
                call.answers[1],
                f"tool call {call.call_id} of the assistant message at seq {call.message_seq} "
                f"is answered {len(call.answers)} times (tool/result at seqs {seqs})",
            )
    if require_closed and open_turn is not None:
        report(open_turn, f"the last turn (turn/start at seq {open_turn}) is never closed")
    problems.sort(key=lambda problem: problem.seq)
    return problems


def _assistant_message(
    seq: int,
    data: dict[str, Any],
    calls: list[_Call],
    latest: dict[str, _Call],
    report: _Report,
) -> bool:
    """Record the message's calls; True when it asks for at least one tool."""
    has_text = False
    asks = False
    for block in _blocks(data):
        kind = block.get("type")
        if kind == "text":
            text = block.get("text")
            has_text = has_text or (isinstance(text, str) and text != "")
        elif kind == "tool-call":
            asks = True
            call_id = block.get("id")
            if not isinstance(call_id, str) or not call_id:
                report(seq, f"the assistant message at seq {seq} has a tool call without an id")
                continue
            if call_id in latest:
                report(
                    seq,
                    f"tool call id {call_id} at seq {seq} is not unique: the assistant "
                    f"message at seq {latest[call_id].message_seq} already used it",
                )
            call = _Call(call_id, seq)
            calls.append(call)
            latest[call_id] = call
    if not has_text and not asks:
        report(seq, f"empty assistant message at seq {seq}: no text and no tool calls")
    return asks


def _tool_result(
    seq: int,
    data: dict[str, Any],
    latest: dict[str, _Call],
    asked: _Asked | None,
    report: _Report,
) -> None:
    call_id = data.get("callId")
    call = latest.get(call_id) if isinstance(call_id, str) else None
    if call is None:
        report(
            seq,
            f"tool result at seq {seq} for call {call_id} is a result without a matching "
            "call: no earlier assistant message asked for it",
        )
        return
    call.answers.append(seq)
    if len(call.answers) > 1:
        return  # an extra answer: reported once per call as "answered N times"
    if asked is None or asked.seq != call.message_seq:
        newer = asked.seq if asked is not None else call.message_seq
        report(
            seq,
            f"tool result at seq {seq} answers call {call_id} of the earlier assistant "
            f"message at seq {call.message_seq}, not of the latest one (seq {newer}): tool "
            "results must immediately follow their assistant message",
        )
    elif asked.interrupted_by is not None:
        report(
            seq,
            f"tool result at seq {seq} for call {call_id} comes after the message at seq "
            f"{asked.interrupted_by}: tool results must immediately follow their assistant "
            f"message (seq {call.message_seq})",
        )
