# The client-visible guarantees of an ACP agent (docs/acp.md), decided from
# the raw JSON-RPC messages the lab exchanged, the logs (read by the lab's own
# reader) and the probe trace:
#   ACP_REPLAY_MISMATCH     session/load replays exactly the repaired log's
#                           conversation, synthetic results and codes included
#   GUIDANCE_NOT_DELIVERED  after TOOL_OUTCOME_UNKNOWN, the first model request
#                           of the next turn carries the logged guidance
#   CANCEL_NOT_PERSISTED    after session/cancel the prompt answers cancelled,
#                           every tool call shown ends (aborted ones shown as
#                           cancelled) and the log holds the real closing events
# The log -> conversation mapping is written here again, apart from the
# runtime's: an oracle sharing the code it checks would share its bugs.
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from faultlab.lab.oracle.codes import Violation
from faultlab.lab.oracle.expected import expected_repair
from faultlab.lab.read.view import LogEvent, LogView
from faultlab.scenario import ToolSpec

__all__ = [
    "Item",
    "check_cancel",
    "check_guidance",
    "check_replay",
    "conversation_from_log",
    "conversation_from_updates",
    "updates_between",
]

META = "faultlab"
Item = tuple[Any, ...]


def conversation_from_log(events: Sequence[LogEvent]) -> list[Item]:
    """What a client must be shown of a log: user and assistant text, top-level
    tool calls (id, arguments) and their results (status, code, text, synthetic)."""
    items: list[Item] = []
    for event in events:
        data = event.data
        if event.type == "user/message":
            items.append(("user", data.get("message")))
        elif event.type == "assistant/message":
            blocks = (data.get("message") or {}).get("content") or []
            text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
            if text:
                items.append(("agent", text))
            for block in blocks:
                if block.get("type") == "tool-call":
                    items.append(("tool_call", block.get("id"), block.get("arguments")))
        elif event.type == "tool/result" and data.get("parentCallId") is None:
            error = data.get("error") or {}
            status = "failed" if data.get("isError") else "completed"
            items.append(
                ("tool_result", data.get("callId"), status, error.get("code"),
                 data.get("content"), bool(data.get("synthetic")))
            )  # fmt: skip
    return items


def updates_between(
    messages: Sequence[tuple[str, dict[str, Any]]], start: int, end: int | None = None
) -> list[dict[str, Any]]:
    """The session/update payloads received in messages[start:end]."""
    return [
        message["params"]["update"]
        for direction, message in messages[start:end]
        if direction == "in" and message.get("method") == "session/update"
    ]


def _text(content: Any) -> str:
    if isinstance(content, dict) and content.get("type") == "text":
        return str(content.get("text", ""))
    return ""


def conversation_from_updates(updates: Sequence[dict[str, Any]]) -> list[Item]:
    """The conversation a client was shown; chunks of one message are joined."""
    items: list[Item] = []
    last_chunk: tuple[str, Any] | None = None
    for update in updates:
        kind = update.get("sessionUpdate")
        if kind in ("user_message_chunk", "agent_message_chunk"):
            who = "user" if kind == "user_message_chunk" else "agent"
            key = (who, update.get("messageId"))
            text = _text(update.get("content"))
            if last_chunk == key and items:
                items[-1] = (who, items[-1][1] + text)
            else:
                items.append((who, text))
            last_chunk = key
            continue
        last_chunk = None
        if kind == "tool_call":
            items.append(("tool_call", update.get("toolCallId"), update.get("rawInput")))
        elif kind == "tool_call_update" and update.get("status") in ("completed", "failed"):
            meta = (update.get("_meta") or {}).get(META) or {}
            texts = [_text(c.get("content")) for c in update.get("content") or []]
            items.append(
                ("tool_result", update.get("toolCallId"), update.get("status"), meta.get("code"),
                 "".join(texts), bool(meta.get("synthetic")))
            )  # fmt: skip
    return items


def check_replay(
    updates: Sequence[dict[str, Any]], log: LogView, *, label: str = "session/load"
) -> list[Violation]:
    """ACP_REPLAY_MISMATCH: the replay shows exactly the log's conversation."""
    shown = conversation_from_updates(updates)
    logged = conversation_from_log(log.events)
    if shown == logged:
        return []
    index = next(
        (i for i, (a, b) in enumerate(zip(shown, logged, strict=False)) if a != b),
        min(len(shown), len(logged)),
    )
    got = shown[index] if index < len(shown) else "nothing"
    want = logged[index] if index < len(logged) else "nothing"
    return [
        Violation(
            "ACP_REPLAY_MISMATCH",
            f"{label} showed {len(shown)} conversation item(s), the log holds {len(logged)}; "
            f"item {index + 1}: shown {_short(got)}, logged {_short(want)}",
            {"index": index, "shown": _jsonable(got), "logged": _jsonable(want)},
        )
    ]


def _short(item: Any) -> str:
    text = repr(item)
    return text if len(text) <= 160 else text[:157] + "..."


def _jsonable(item: Any) -> Any:
    return list(item) if isinstance(item, tuple) else item


def check_guidance(
    crashed: LogView, repaired: LogView, trace: Sequence[Mapping[str, Any]]
) -> list[Violation]:
    """GUIDANCE_NOT_DELIVERED: every TOOL_OUTCOME_UNKNOWN result repair wrote
    reaches the model, code and text as logged, in the first request after it."""
    added = repaired.events[len(crashed.events) :]
    unknown = [
        e for e in added
        if e.type == "tool/result" and (e.data.get("error") or {}).get("code")
        == "TOOL_OUTCOME_UNKNOWN" and e.data.get("parentCallId") is None
    ]  # fmt: skip
    if not unknown:
        return []
    request = next((m for m in trace if m.get("fact") == "model/input"), None)
    if request is None:
        return []  # the script had no further step: no request to carry it
    sent = {(e.get("callId"), e.get("code")): e.get("content") for e in request["toolErrors"]}
    found = []
    for event in unknown:
        call_id = event.data.get("callId")
        got = sent.get((call_id, "TOOL_OUTCOME_UNKNOWN"))
        if got != event.data.get("content"):
            found.append(
                Violation(
                    "GUIDANCE_NOT_DELIVERED",
                    f"the first model request after the repair ({request.get('requestId')}) "
                    + ("lacks" if got is None else "alters")
                    + f" the TOOL_OUTCOME_UNKNOWN guidance of {call_id}",
                    {
                        "callId": call_id,
                        "requestId": request.get("requestId"),
                        "sent": got,
                        "logged": event.data.get("content"),
                    },
                )
            )
    return found


def check_cancel(
    *, shown: Sequence[dict[str, Any]], stop_reason: str | None, log: LogView,
    tools: Mapping[str, ToolSpec], trace: Sequence[Mapping[str, Any]],
) -> list[Violation]:  # fmt: skip
    """CANCEL_NOT_PERSISTED (and DISPATCH_AFTER_CANCEL) after session/cancel."""
    found: list[Violation] = []

    def fail(message: str, **evidence: Any) -> None:
        found.append(Violation("CANCEL_NOT_PERSISTED", message, evidence))

    ends = [e for e in log.events if e.type == "turn/end"]
    kind = (ends[-1].data.get("reason") or {}).get("kind") if ends else None
    repair = expected_repair(log.events, tools)
    if log.last_turn_open or repair.results:
        fail(
            "after session/cancel answered, the log's last turn is still open"
            + (f" with {len(repair.results)} unanswered call(s)" if repair.results else ""),
            unanswered=[r.call_id for r in repair.results],
        )
    elif kind not in ("cancelled", "completed"):
        fail(f"the cancelled turn ended {kind!r}, not 'cancelled'", kind=kind)
    want = {"cancelled": "cancelled", "completed": "end_turn"}.get(str(kind))
    if stop_reason != want:
        fail(
            f"session/prompt answered stopReason {stop_reason!r}; the log's turn ended {kind!r}",
            stopReason=stop_reason, kind=kind,
        )  # fmt: skip
    last: dict[str, dict[str, Any]] = {}
    for update in shown:
        if update.get("sessionUpdate") in ("tool_call", "tool_call_update"):
            last[str(update.get("toolCallId"))] = update
    results = {
        e.data.get("callId"): e
        for e in log.events
        if e.type == "tool/result" and e.data.get("parentCallId") is None
    }
    for call_id, update in last.items():
        status = update.get("status")
        code = ((update.get("_meta") or {}).get(META) or {}).get("code")
        logged = results.get(call_id)
        logged_code = ((logged.data.get("error") or {}).get("code")) if logged else None
        if status not in ("completed", "failed"):
            fail(f"tool call {call_id} was left {status!r} for the client after the cancel",
                 callId=call_id, status=status)  # fmt: skip
        elif logged_code == "ABORTED_BEFORE_DISPATCH" and code != logged_code:
            fail(f"tool call {call_id} was aborted by the cancel but shown with code {code!r}",
                 callId=call_id, code=code)  # fmt: skip
    cancelled_at = next((i for i, m in enumerate(trace) if m.get("fact") == "session/cancel"), None)
    if cancelled_at is not None:
        for message in trace[cancelled_at:]:
            if message.get("boundary") == "tool/durable" and message.get("parentCallId") is None:
                found.append(Violation(
                    "DISPATCH_AFTER_CANCEL",
                    f"the body of {message.get('callId')} started after session/cancel was "
                    "handled", {"callId": message.get("callId")},
                ))  # fmt: skip
    return found
