# `faultlab inspect LOG --reader NAME`: an agent's own session log (Claude
# Code's project JSONL, Codex's rollout, the Agents SDK's SQLite session,
# deepseek-harness's zstd JSONL) as the conversation it would resume with:
# the timeline, the calls left without a result, and what a model API
# would reject in it.
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from faultlab.lab.read.agentlogs import AGENT_READERS, read_agent_log
from faultlab.lab.read.histories import classify_result, pairing_problems

__all__ = ["AGENT_READERS", "AgentInspection", "inspect_agent_log"]


@dataclass(frozen=True, slots=True)
class AgentInspection:
    lines: tuple[str, ...]
    healthy: bool
    data: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return self.data


def inspect_agent_log(path: Path, reader: str) -> AgentInspection:
    """Read `path` with `reader` (raises LabUsageError for an unknown reader
    or an unreadable file; a torn last line is counted, not raised)."""
    log = read_agent_log(reader, path, near=Path.cwd())  # a module:function reader's file here
    history = log.history
    lines = [f"{path}: {len(history.messages)} message(s) ({reader} log"
             + (f", {log.skipped} unreadable line(s) skipped" if log.skipped else "") + ")"]
    results = history.results()
    for index, message in enumerate(history.messages):
        if message.role == "tool":
            shown = classify_result(message) or "?"
            lines.append(f"  {index:3} tool      {message.call_id}: {shown}: {message.text[:70]!r}")
            continue
        text = f"{message.text[:70]!r}" if message.text else ""
        calls = ", ".join(f"{c.name}({c.id})" for c in message.calls)
        lines.append(f"  {index:3} {message.role:9} {text}{' -> ' + calls if calls else ''}")
    dangling = [c for c in history.calls() if c.id not in results]
    problems = pairing_problems(history)
    if dangling:
        lines.append("calls without a result: "
                     + ", ".join(f"{c.name} {c.arguments} ({c.id})" for c in dangling))  # fmt: skip
    lines.append("a model API would reject it: " + problems[0] if problems
                 else "history is valid by the model APIs' pairing rules")  # fmt: skip
    data = {
        "path": str(path), "reader": reader, "skipped": log.skipped,
        "messages": history.to_json(), "dangling": [c.id for c in dangling],
        "problems": problems, "healthy": not problems,
    }  # fmt: skip
    return AgentInspection(tuple(lines), not problems, data)
