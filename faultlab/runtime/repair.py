# Crash repair: what to append to a session whose last turn is open, so the
# history a model is sent is valid again and tells the truth about every tool
# call the crash left unanswered:
#   - no durable tool/call  -> TOOL_NOT_STARTED (it never ran; retry if needed)
#   - durable tool/call     -> TOOL_OUTCOME_UNKNOWN, citing the call's seq,
#                              with retry guidance from the tool's annotations
#   - then step/end for an open step and turn/end {interrupted}.
# `plan_repair` is a pure function of the events, so repairing a repaired log
# plans nothing and a repair cut short converges on the next load.
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from faultlab.runtime.events import (
    ASSISTANT_MESSAGE,
    STEP_END,
    STEP_START,
    TOOL_CALL,
    TOOL_NOT_STARTED,
    TOOL_OUTCOME_UNKNOWN,
    TOOL_RESULT,
    TURN_END,
    TURN_START,
    Event,
)
from faultlab.runtime.history import tool_calls_of

__all__ = ["RepairAction", "guidance", "plan_repair"]

# name -> True when a retry after an unknown outcome is safe (read-only or
# idempotent), False when it is not, None when the tool is unknown.
SafetyLookup = Callable[[str], bool | None]


@dataclass(frozen=True, slots=True)
class RepairAction:
    """One event crash repair appends."""

    type: str
    data: dict[str, Any]


def guidance(code: str, name: str, call_id: str, safe_to_retry: bool | None) -> tuple[str, str]:
    """Model-visible text and retry class ("safe" or "verify") of a repair result."""
    if code == TOOL_NOT_STARTED:
        return (
            f"Tool call {name} ({call_id}) was never started: the session stopped before it "
            "was dispatched, so it had no effect. Call it again if it is still needed.",
            "safe",
        )
    head = (
        f"The outcome of tool call {name} ({call_id}) is unknown: the session stopped after "
        "it was dispatched and before its result was recorded."
    )
    if safe_to_retry:
        return (
            f"{head} The tool is read-only or idempotent, so it is safe to call it again.",
            "safe",
        )
    return (
        f"{head} It may have taken effect. Do not retry it blindly: retry only if the "
        "operation is read-only or idempotent; otherwise verify the external state first "
        "or ask the user.",
        "verify",
    )


def _open_turn(events: Sequence[Event]) -> tuple[int, int] | None:
    """(index of the last turn/start, its turn number) if that turn has no turn/end."""
    for index in range(len(events) - 1, -1, -1):
        event = events[index]
        if event.type == TURN_END:
            return None
        if event.type == TURN_START:
            return index, int(event.data["turn"])
    return None


def plan_repair(events: Sequence[Event], safe_to_retry: SafetyLookup) -> list[RepairAction]:
    opened = _open_turn(events)
    if opened is None:
        return []
    start, turn = opened
    in_turn = events[start:]
    calls: dict[str, Event] = {}
    answered: set[str] = set()
    children: dict[str, list[Event]] = {}
    open_step: int | None = None
    for event in in_turn:
        data = event.data
        if event.type == TOOL_CALL:
            calls[data["callId"]] = event
            parent = data.get("parentCallId")
            if parent is not None:
                children.setdefault(parent, []).append(event)
        elif event.type == TOOL_RESULT:
            answered.add(data["callId"])
        elif event.type == STEP_START:
            open_step = int(data["step"])
        elif event.type == STEP_END:
            open_step = None

    actions: list[RepairAction] = []

    def unknown(call: Event) -> None:
        # Nested calls answer first: a parent returns after its children.
        for child in children.get(call.data["callId"], ()):
            if child.data["callId"] not in answered:
                unknown(child)
        data = call.data
        text, retry = guidance(
            TOOL_OUTCOME_UNKNOWN, data["name"], data["callId"], safe_to_retry(data["name"])
        )
        result = _result(
            data["turn"], data["step"], data["callId"], TOOL_OUTCOME_UNKNOWN, text, retry, call.seq
        )
        if "parentCallId" in data:
            result["parentCallId"] = data["parentCallId"]
        actions.append(RepairAction(TOOL_RESULT, result))
        answered.add(data["callId"])

    for event in in_turn:
        if event.type != ASSISTANT_MESSAGE:
            continue
        for block in tool_calls_of(event.data["message"]):
            call_id = block["id"]
            if call_id in answered:
                continue
            call = calls.get(call_id)
            if call is not None:
                unknown(call)
                continue
            text, retry = guidance(TOOL_NOT_STARTED, block["name"], call_id, None)
            actions.append(
                RepairAction(
                    TOOL_RESULT,
                    _result(
                        event.data["turn"],
                        event.data["step"],
                        call_id,
                        TOOL_NOT_STARTED,
                        text,
                        retry,
                        event.seq,
                    ),
                )
            )
            answered.add(call_id)
    if open_step is not None:
        actions.append(RepairAction(STEP_END, {"turn": turn, "step": open_step}))
    actions.append(RepairAction(TURN_END, {"turn": turn, "reason": {"kind": "interrupted"}}))
    return actions


def _result(
    turn: int, step: int, call_id: str, code: str, text: str, retry: str, source: int
) -> dict[str, Any]:
    return {
        "turn": turn,
        "step": step,
        "callId": call_id,
        "content": text,
        "isError": True,
        "error": {"code": code, "message": text, "retry": retry},
        "sourceEventSeqs": [source],
        "synthetic": True,
    }
