# The value types of a read of a session store, and the problem codes: what the
# lab's readers (the JSONL reader in jsonl.py, the SQLite one in sqlite.py) say
# a log durably holds, as one `LogView` of `LogEvent`s and `LogProblem`s, so the
# oracle judges every backend alike.  Also the ten event types of format
# version 1 (docs/log-format.md).  Kept apart from the byte-level parsing:
# most of the lab (the oracle, the reports) needs only these types.
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

__all__ = [
    "BAD_HEADER",
    "CORRUPT_COMMITTED_LOG",
    "EVENT_TYPES",
    "REQUEST_DUPLICATE",
    "SEQ_DUPLICATE",
    "SEQ_GAP",
    "TURN_DUPLICATE",
    "LogEvent",
    "LogProblem",
    "LogView",
]

CORRUPT_COMMITTED_LOG = "CORRUPT_COMMITTED_LOG"
SEQ_GAP = "SEQ_GAP"
SEQ_DUPLICATE = "SEQ_DUPLICATE"
BAD_HEADER = "BAD_HEADER"
# Two `turn/start` for one turn number, two `request/header` for one request id
# (read/identity.py).
TURN_DUPLICATE = "TURN_DUPLICATE"
REQUEST_DUPLICATE = "REQUEST_DUPLICATE"

# Version 1 has exactly these ten event types; any other makes a line bad.
EVENT_TYPES: frozenset[str] = frozenset(
    {
        "turn/start",
        "user/message",
        "step/start",
        "step/end",
        "request/header",
        "assistant/chunk",
        "assistant/message",
        "tool/call",
        "tool/result",
        "turn/end",
    }
)


class LogEvent(NamedTuple):
    """One good event line: ``line`` is 1-based (the header is line 1), ``offset``
    the byte offset of the start of the line.

    A named tuple rather than a slotted dataclass: a big log is hundreds of
    thousands of them, and a tuple is built from its six values in one
    C-level call (`tuple.__new__` over a `zip` of the columns) where a
    slotted instance needs six stores, one per field."""

    seq: int
    type: str
    time: float
    data: dict[str, Any]
    line: int
    offset: int


@dataclass(frozen=True, slots=True)
class LogProblem:
    """A defect of the log, at the line and byte offset where it starts."""

    code: str
    line: int
    offset: int
    message: str


@dataclass(frozen=True, slots=True)
class LogView:
    """What a log file durably says.

    ``valid_size`` is where the kept part ends; ``torn_bytes`` (= ``size`` -
    ``valid_size``) were cut as a torn tail or as damage after the last
    completed turn.  A log with a bad header keeps nothing and cuts nothing.
    """

    path: str
    exists: bool
    header: dict[str, Any] | None
    events: tuple[LogEvent, ...]
    size: int
    valid_size: int
    torn_bytes: int
    problems: tuple[LogProblem, ...]
    # Why the `torn_bytes` were cut: a last line with no newline (a torn
    # write), or a complete line that is damaged with no completed turn after
    # it; "" when nothing was cut.  Said apart so a reader is never told that
    # a whole, undecodable line was "torn".
    cut: str = ""

    @property
    def session_id(self) -> str | None:
        if self.header is None:
            return None
        value = self.header.get("id")
        return value if isinstance(value, str) else None

    @property
    def seqs_ok(self) -> bool:
        """No problem of any kind: the kept events are a clean, contiguous log."""
        return not self.problems

    @property
    def last_turn_open(self) -> bool:
        """The last ``turn/start`` has no ``turn/end`` after it."""
        for event in reversed(self.events):
            if event.type == "turn/end":
                return False
            if event.type == "turn/start":
                return True
        return False
