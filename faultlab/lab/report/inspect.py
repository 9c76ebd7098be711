# `faultlab inspect`: a session log (JSONL or SQLite, told apart by content) as
# a person wants to see it after a crash:
# its timeline, what the lab's reader found wrong with it, what crash repair
# should append, and whether its history is valid for a model API.
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from faultlab.lab.oracle.expected import after_repair, expected_repair
from faultlab.lab.oracle.validity import check_history
from faultlab.lab.read.stores import read_user_log
from faultlab.lab.read.view import LogEvent
from faultlab.scenario import ToolSpec, load_scenario

__all__ = ["Inspection", "inspect_log"]


@dataclass(frozen=True, slots=True)
class Inspection:
    """What `inspect` found, as lines for people and a value for machines."""

    lines: tuple[str, ...]
    healthy: bool
    data: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return self.data


def _describe(event: LogEvent) -> str:
    data = event.data
    where = f"t{data.get('turn', '?')}" + (f".s{data['step']}" if "step" in data else "")
    detail = ""
    if event.type == "user/message":
        detail = repr(str(data.get("message", ""))[:50])
    elif event.type == "assistant/message":
        blocks = (data.get("message") or {}).get("content") or []
        calls = [
            b.get("id") for b in blocks if isinstance(b, dict) and b.get("type") == "tool-call"
        ]
        detail = f"calls {calls}" if calls else "text"
    elif event.type in ("tool/call", "tool/result"):
        detail = str(data.get("callId"))
        if event.type == "tool/result" and isinstance(data.get("error"), dict):
            detail += f" {data['error'].get('code')}"
    elif event.type == "turn/end":
        detail = str((data.get("reason") or {}).get("kind"))
    elif event.type == "request/header":
        detail = str(data.get("requestId"))
    return f"{event.seq:6}  {event.type:18} {where:8} {detail}"


def inspect_log(path: Path, scenario: Path | None = None) -> Inspection:
    view = read_user_log(path)
    tools: dict[str, ToolSpec] = {}
    if scenario is not None:
        tools = {spec.name: spec for spec in load_scenario(scenario).tools}
    lines = [f"{path}: session {view.session_id}, {len(view.events)} event(s), {view.size} byte(s)"]
    chunks = 0
    for event in view.events:
        if event.type == "assistant/chunk":
            chunks += 1
            continue
        if chunks:
            lines.append(f"{'':6}  ({chunks} assistant/chunk event(s))")
            chunks = 0
        lines.append(_describe(event))
    if chunks:
        lines.append(f"{'':6}  ({chunks} assistant/chunk event(s))")
    if view.torn_bytes:
        lines.append(
            f"cut on load: {view.torn_bytes} byte(s) after byte {view.valid_size}: "
            + (view.cut or "damage")
        )
    for problem in view.problems:
        lines.append(f"{problem.code}: {problem.message}")  # the message says where
    repair = expected_repair(view.events, tools)
    if view.last_turn_open:
        lines.append("crash repair would append:")
        for result in repair.results:
            lines.append(
                f"  tool/result {result.call_id} ({result.name}): {result.code} "
                f"citing seq {result.cites}, retry {result.retry}"
            )
        if repair.close_step is not None:
            lines.append(f"  step/end step {repair.close_step}")
        lines.append(f"  turn/end turn {repair.close_turn} {{interrupted}}")
    else:
        lines.append("last turn is closed: nothing to repair")
    # Judge the history as crash repair would leave it: a crashed log's
    # unanswered calls are what repair is for, not a defect of the log.
    history = check_history(after_repair(view.events, repair), require_closed=True)
    lines += [f"PROVIDER_INVALID_HISTORY: seq {p.seq}: {p.message}" for p in history]
    healthy = view.exists and not view.problems and not history
    lines.append("log is readable and its history is valid" if healthy else "log has problems")
    data = {
        "path": str(path),
        "sessionId": view.session_id,
        "events": len(view.events),
        "tornBytes": view.torn_bytes,
        "cut": view.cut,
        "problems": [vars_of(p) for p in view.problems],
        "openTurn": view.last_turn_open,
        "expectedRepair": [
            {
                "callId": r.call_id,
                "name": r.name,
                "code": r.code,
                "cites": r.cites,
                "parentCallId": r.parent_call_id,
                "retry": r.retry,
            }
            for r in repair.results
        ],
        "historyProblems": [vars_of(p) for p in history],
        "healthy": healthy,
    }
    return Inspection(tuple(lines), healthy, data)


def vars_of(value: Any) -> dict[str, Any]:
    return {name: getattr(value, name) for name in value.__slots__}
