# What failure output says of a case judged on faultlab's own servers'
# records (a black-box agent's case and its coverage case: its artifacts
# name `records`): the files its folder really holds, and each guarantee in
# its black-box meaning, never the session-log wording of a white-box case
# (`request/header`, `tool/call` durable, strace) that does not apply to it.
from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from pathlib import Path

from faultlab.lab.oracle.case import CaseResult

__all__ = ["SERVER_PROMISES", "judged_on_servers", "server_files", "server_ground_truth"]

# code -> its promise for a black-box agent (docs/guarantees.md, "Black-box agents").
SERVER_PROMISES: dict[str, str] = {
    "REQUEST_ENVELOPE_LOST": "G1 request envelope (black box): every user message of a request "
    "that reached the model server is in the resumed agent's history.",
    "TOOL_INTENT_LOST": "G2 tool intent (black box): every call the MCP tool server received "
    "before the kill is in the resumed agent's history.",
    "REPAIR_MISCLASSIFIED": "G3 classification (black box): a call the tool server applied is "
    "shown to the resumed model as its real result or an unknown outcome; a call it never "
    "received, never as a success.",
    "COMPLETED_TURN_LOST": "G4 settled work (black box): the final answer of every turn that "
    "ended before the kill is in the resumed agent's history.",
    "SIDE_EFFECT_DUPLICATED": "G6 safe retry (black box): no non-idempotent effect is in the "
    "world ledger more often than in the run without the fault.",
    "PROVIDER_INVALID_HISTORY": "G7 valid history (black box): every request of the resumed "
    "agent obeys the model APIs' pairing rules.",
}
# code -> the files (patterns) of the case's folder that show it, most telling first.
_FILES: dict[str, tuple[str, ...]] = {
    "SIDE_EFFECT_DUPLICATED": ("world.jsonl", "records.jsonl"),
    "REFERENCE_FAILED": ("run*.stderr", "run*.stdout", "records.jsonl", "final-*.history.json"),
    "BOUNDARY_NOT_REACHED": ("records.jsonl", "run*.stdout", "run*.stderr"),
    "SESSION_NOT_FOUND": ("at-kill-*.history.json", "run*-resume.stderr", "records.jsonl"),
}
_DEFAULT = ("records.jsonl", "at-kill-*.history.json", "final-*.history.json", "world.jsonl")


def judged_on_servers(result: CaseResult) -> bool:
    """Whether the case's ground truth is faultlab's servers' records."""
    return "records" in result.artifacts


def server_files(result: CaseResult, codes: Iterable[str]) -> list[str]:
    """The files of the case's folder that show `codes`' problems, most
    telling first: only names the folder holds (violations.json, which every
    kept failure has, when none of them is there)."""
    where = Path(result.artifacts.get("dir", ""))
    try:
        present = sorted(p.name for p in where.iterdir() if not p.is_dir())
    except OSError:
        present = []
    names: list[str] = []
    for code in codes:
        for pattern in _FILES.get(code, _DEFAULT):
            names += [n for n in fnmatch.filter(present, pattern) if not n.endswith(".refused.txt")]
    return list(dict.fromkeys(names)) or ["violations.json"]


def server_ground_truth(count: int) -> str:
    return (f"faultlab's model and tool servers (the requests and tool calls they received, "
            f"the world ledger) for {count} scenario(s)")  # fmt: skip
