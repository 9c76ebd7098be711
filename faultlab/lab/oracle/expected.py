# The crash repair the lab expects for a log, computed from its durable events
# and the tools' annotations alone (docs/log-format.md section 8, guarantees
# G3 and G6).  It owns the prediction only: which unanswered calls get which
# synthetic result, citing which seq, with which retry guidance, and which
# step and turn get closed.  Comparing it with what the target did is the
# oracle's job.
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from faultlab.lab.read.view import LogEvent
from faultlab.scenario import ToolSpec

__all__ = [
    "TOOL_NOT_STARTED",
    "TOOL_OUTCOME_UNKNOWN",
    "ExpectedRepair",
    "ExpectedResult",
    "after_repair",
    "expected_repair",
]

TOOL_NOT_STARTED = "TOOL_NOT_STARTED"
TOOL_OUTCOME_UNKNOWN = "TOOL_OUTCOME_UNKNOWN"


@dataclass(frozen=True, slots=True)
class ExpectedResult:
    """One synthetic ``tool/result`` repair must append, in this order."""

    call_id: str
    name: str
    code: str
    cites: int  # the single seq in sourceEventSeqs
    parent_call_id: str | None
    retry: str  # "safe" or "verify"


@dataclass(frozen=True, slots=True)
class ExpectedRepair:
    """Everything repair must append; empty when the last turn is closed.

    ``close_step`` / ``close_turn`` are the step and turn numbers repair must
    close (``None``: nothing to close); -1 stands for a number the log does not
    give as an integer.
    """

    results: tuple[ExpectedResult, ...] = ()
    close_step: int | None = None
    close_turn: int | None = None

    @property
    def nothing(self) -> bool:
        return not self.results and self.close_step is None and self.close_turn is None


@dataclass(frozen=True, slots=True)
class _Nested:
    call_id: str
    name: str
    seq: int


def _number(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else -1


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _tool_calls(data: dict[str, Any]) -> list[tuple[str, str]]:
    """(id, name) of the message's tool-call blocks in model order."""
    message = data.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, list):
        return []
    found: list[tuple[str, str]] = []
    for block in content:
        if isinstance(block, dict) and block.get("type") == "tool-call":
            call_id = block.get("id")
            if isinstance(call_id, str):
                found.append((call_id, _text(block.get("name"))))
    return found


def _retry(code: str, name: str, tools: Mapping[str, ToolSpec]) -> str:
    if code != TOOL_OUTCOME_UNKNOWN:
        return "safe"
    spec = tools.get(name)
    return "safe" if spec is not None and (spec.read_only or spec.idempotent) else "verify"


def expected_repair(events: Sequence[LogEvent], tools: Mapping[str, ToolSpec]) -> ExpectedRepair:
    """The repair of the last turn if it is open (a ``turn/start`` with no
    ``turn/end`` after it); otherwise nothing."""
    start = next((i for i in range(len(events) - 1, -1, -1) if events[i].type == "turn/start"), -1)
    if start < 0:
        return ExpectedRepair()
    turn = events[start:]
    if any(event.type == "turn/end" for event in turn):
        return ExpectedRepair()

    answered_top: set[str] = set()
    answered_any: set[str] = set()
    top_calls: dict[str, int] = {}
    children: dict[str, list[_Nested]] = {}
    seen_nested: set[str] = set()
    step: int | None = None
    for event in turn:
        data = event.data
        if event.type == "tool/result":
            call_id = data.get("callId")
            if isinstance(call_id, str):
                answered_any.add(call_id)
                if data.get("parentCallId") is None:
                    answered_top.add(call_id)
        elif event.type == "tool/call":
            call_id, parent = data.get("callId"), data.get("parentCallId")
            if not isinstance(call_id, str):
                continue
            if parent is None:
                top_calls.setdefault(call_id, event.seq)
            elif isinstance(parent, str) and call_id not in seen_nested:
                seen_nested.add(call_id)
                nested = _Nested(call_id, _text(data.get("name")), event.seq)
                children.setdefault(parent, []).append(nested)
        elif event.type == "step/start":
            step = _number(data.get("step"))
        elif event.type == "step/end":
            step = None

    results: list[ExpectedResult] = []
    done: set[str] = set()  # answered by this repair already
    for event in turn:
        if event.type != "assistant/message":
            continue
        for call_id, name in _tool_calls(event.data):
            if call_id in answered_top or call_id in done:
                continue
            done.add(call_id)
            cited = top_calls.get(call_id)
            if cited is None:
                results.append(
                    ExpectedResult(call_id, name, TOOL_NOT_STARTED, event.seq, None, "safe")
                )
                continue
            for nested, parent in _unanswered_nested(call_id, children, answered_any):
                done.add(nested.call_id)
                results.append(
                    ExpectedResult(
                        nested.call_id,
                        nested.name,
                        TOOL_OUTCOME_UNKNOWN,
                        nested.seq,
                        parent,
                        _retry(TOOL_OUTCOME_UNKNOWN, nested.name, tools),
                    )
                )
            retry = _retry(TOOL_OUTCOME_UNKNOWN, name, tools)
            results.append(ExpectedResult(call_id, name, TOOL_OUTCOME_UNKNOWN, cited, None, retry))
    close_turn = _number(events[start].data.get("turn"))
    return ExpectedRepair(tuple(results), step, close_turn)


def _unanswered_nested(
    root: str, children: Mapping[str, list[_Nested]], answered: set[str]
) -> list[tuple[_Nested, str]]:
    """The descendants of ``root`` without a result, depth first, children in
    log order, each after its own descendants (a parent returns last)."""
    out: list[tuple[_Nested, str]] = []
    visited = {root}
    # Each frame: (the call, its parent id, index of its next child to visit).
    stack: list[tuple[_Nested | None, str, int]] = [(None, root, 0)]
    while stack:
        node, parent, index = stack[-1]
        node_id = root if node is None else node.call_id
        kids = children.get(node_id, [])
        if index < len(kids):
            stack[-1] = (node, parent, index + 1)
            kid = kids[index]
            if kid.call_id not in visited:
                visited.add(kid.call_id)
                stack.append((kid, node_id, 0))
            continue
        stack.pop()
        if node is not None and node.call_id not in answered:
            out.append((node, parent))
    return out


def after_repair(events: Sequence[LogEvent], repair: ExpectedRepair) -> list[LogEvent]:
    """`events` followed by a simulation of `repair` (what crash repair would
    append: results, closers), enough for the pairing rules of G7.  The
    simulated events have line 0 and offset -1."""
    simulated = list(events)

    def add(type_: str, data: dict[str, Any]) -> None:
        simulated.append(LogEvent(len(simulated), type_, 0.0, data, 0, -1))

    for result in repair.results:
        data: dict[str, Any] = {
            "callId": result.call_id,
            "isError": True,
            "error": {"code": result.code},
        }
        if result.parent_call_id is not None:
            data["parentCallId"] = result.parent_call_id
        add("tool/result", data)
    if repair.close_step is not None:
        add("step/end", {"step": repair.close_step})
    if repair.close_turn is not None:
        add("turn/end", {"turn": repair.close_turn, "reason": {"kind": "interrupted"}})
    return simulated
