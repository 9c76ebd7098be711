# Black-box kill points: the boundaries that faultlab's own servers observe
# (the model server and the MCP tool server), and a kill point's text form
# `boundary#n@delay` (e.g. `tool/applied#1@200ms`).  A real agent reports
# nothing, so these are the only boundaries a black-box case can name.
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from faultlab.lab.errors import LabUsageError

__all__ = [
    "APP_BOUNDARIES",
    "BLACKBOX_BOUNDARIES",
    "DEFAULT_DELAYS_MS",
    "KillPoint",
    "parse_delays",
    "parse_kill_point",
]

# In the order one tool round goes through them.
BLACKBOX_BOUNDARIES = (
    "model/request",  # a model request arrived (parked unanswered at @0)
    "model/chunk",  # the model stream sent chunk n (cut after it at @0)
    "tool/received",  # the tool server received a call, before its effect
    "tool/applied",  # the call's effect is in the world ledger (fsynced)
    "tool/replied",  # the tool server sent the call's result
)
# What a framework app's child reports (faultlab/lab/apps/lgchild.py,
# pachild.py, docs/frameworks.md): its model, tools and store proxy.
APP_BOUNDARIES = (
    "model/request",  # the scripted chat model was called (digest of the messages)
    "model/answered",  # its answer is made, not yet returned to the framework
    "tool/started",  # a tool body started, before its effect
    "tool/effect",  # the effect is in the world ledger (fsynced)
    "tool/returned",  # the body is returning its result
    "checkpoint/put",  # a checkpoint write started
    "checkpoint/put-done",  # ... and completed
    "checkpoint/writes",  # a pending-writes write started
    "checkpoint/writes-done",  # ... and completed
    "history/save",  # a pydantic-ai app's history save started
    "history/save-done",  # ... and completed
    "invoke/end",  # one invocation of the graph returned
)
# Agents persist asynchronously: the same boundary killed 0, 50, 200 ms or
# 1 s later finds different things on disk (docs/agents.md).
DEFAULT_DELAYS_MS = (0, 50, 200, 1000)
_MAX_DELAY_MS = 60_000
_TEXT = re.compile(
    r"(?P<boundary>[a-z]+/[a-z-]+)(?:#(?P<n>\d+))?(?:@(?P<delay>\d+)(?P<unit>ms|s)?)?"
)


@dataclass(frozen=True, slots=True)
class KillPoint:
    """Occurrence `n` (from 1, per boundary, over the whole case) of
    `boundary`, and how long after it the agent is killed.  At delay 0 the
    server holds at the boundary until the kill; with a delay it serves on."""

    boundary: str
    n: int = 1
    delay_ms: int = 0

    def __post_init__(self) -> None:
        if self.boundary not in BLACKBOX_BOUNDARIES and self.boundary not in APP_BOUNDARIES:
            raise LabUsageError(
                f"unknown black-box boundary {self.boundary!r} "
                f"(boundaries: {', '.join(BLACKBOX_BOUNDARIES)}; "
                f"of an --app: {', '.join(APP_BOUNDARIES)})"
            )
        if self.n < 1:
            raise LabUsageError(f"{self.boundary}: occurrence must be >= 1, not {self.n}")
        if not 0 <= self.delay_ms <= _MAX_DELAY_MS:
            raise LabUsageError(
                f"{self.boundary}#{self.n}: delay must be 0 to {_MAX_DELAY_MS} ms, "
                f"not {self.delay_ms}"
            )

    @property
    def occurrence(self) -> str:
        return f"{self.boundary}#{self.n}"

    def __str__(self) -> str:
        delay = (
            f"{self.delay_ms // 1000}s"
            if self.delay_ms >= 1000 and not self.delay_ms % 1000
            else f"{self.delay_ms}ms"
        )
        return f"{self.occurrence}@{delay}"


def parse_kill_point(text: str, *, boundaries: Sequence[str] = BLACKBOX_BOUNDARIES) -> KillPoint:
    """`tool/applied`, `tool/applied#2`, `tool/applied#2@200ms`, `model/request@1s`
    (no `#n`: the first; no delay: 0), at one of `boundaries` (a black-box
    agent's by default; an --app's are APP_BOUNDARIES).  Raises LabUsageError."""
    match = _TEXT.fullmatch(text.strip())
    if match is None:
        raise LabUsageError(
            f"bad black-box kill point {text!r} (like tool/applied#1@200ms: "
            f"boundary, optional #occurrence, optional @delay in ms or s)"
        )
    if match["boundary"] not in boundaries:
        kind = "--app" if boundaries is APP_BOUNDARIES else "black-box"
        raise LabUsageError(f"unknown {kind} boundary {match['boundary']!r} "
                            f"(boundaries: {', '.join(boundaries)})")  # fmt: skip
    delay = int(match["delay"] or 0) * (1000 if match["unit"] == "s" else 1)
    return KillPoint(match["boundary"], int(match["n"] or 1), delay)


def parse_delays(text: str) -> tuple[int, ...]:
    """`0,200ms,1000`: kill delays in milliseconds.  Raises LabUsageError."""
    parts = [part.strip().removesuffix("ms") for part in text.split(",") if part.strip()]
    # ASCII digits, at most 600000 ms (ten minutes): no nan, no negative, no 1e308
    if not parts or not all(p.isascii() and p.isdigit() and len(p.lstrip("0")) <= 6
                            and int(p) <= 600_000 for p in parts):
        message = f"--delays {text[:60]!r}: comma-separated milliseconds 0..600000, e.g. 0,200"
        raise LabUsageError(message)
    return tuple(int(p) for p in parts)
