# What a child sends and leaves, checked and bounded: one decoded probe
# report is checked against the protocol (`report_problem`), a report line has
# a length bound (`MAX_REPORT_LINE`), and a child's output file is cut to its
# head and tail (`bound_output`).  `ProbeReport` is the shape a checked report
# has wherever a trace is read.  The child itself is faultlab/lab/process/spawn.py.
from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any, TypedDict

from faultlab.probe import BOUNDARIES

__all__ = [
    "MAX_REPORTS",
    "MAX_REPORT_LINE",
    "OUTPUT_HEAD",
    "OUTPUT_TAIL",
    "ProbeReport",
    "bound_output",
    "report_problem",
]

# A probe report is one short JSON line; a longer one is refused (and the
# buffer dropped) so a target cannot grow the lab's memory without bound.
MAX_REPORT_LINE = 1 << 20
# Probe reports kept of one run: a target that reports without end must not
# fill the lab's memory (about 1 KiB each); more is a BAD_PROBE_REPORT.
MAX_REPORTS = 200_000
# What is kept of a child's stdout+stderr file: its first and last bytes,
# with a note of what was dropped between them (docs/cli.md "Limits").
OUTPUT_HEAD = 64 << 10
OUTPUT_TAIL = 64 << 10


class ProbeReport(TypedDict, total=False):
    """One report of a trace (docs/probe-protocol.md section 3): a boundary
    (`boundary` and `n`, checked by `report_problem`) or a fact (`fact`), with
    the facts section 6 and 3.2 give it.  Only `boundary`+`n` or `fact` are
    always there; a target may add keys this type does not name (they are kept:
    DRIFT compares them).  The black-box and app drives' gate records take this
    shape too (`servers.records.as_trace`)."""

    boundary: str  # a boundary report: its name ...
    n: int  # ... and its occurrence in this process (the gate: in this case)
    parked: bool  # only on the armed occurrence
    fact: str  # a fact report: its name (not a kill point)
    # The boundaries' facts (section 6).
    turn: int
    step: int
    reason: str
    requestId: str
    digest: str
    messageCount: int
    index: int
    seq: int
    callId: str
    callIds: list[str]
    parentCallId: str | None
    tool: str
    applied: bool
    isError: bool
    first: int
    last: int
    count: int
    # The file facts (section 3.2) and `flush/written`.
    file: str
    dir: str
    size: int
    offset: int
    bytes: int
    keptIn: str
    ok: bool
    error: str
    toolErrors: list[Any]
    sessionId: str
    source: str


def report_problem(message: object) -> str | None:
    """What is wrong with one decoded probe report, or None
    (docs/probe-protocol.md: a JSON object; a boundary report names a known
    boundary and its occurrence `n`, a whole number >= 1)."""
    if not isinstance(message, dict):
        return f"a report must be a JSON object, not {type(message).__name__}"
    if "boundary" not in message:
        return None
    boundary, n = message["boundary"], message.get("n")
    if not isinstance(boundary, str):
        return f"'boundary' must be a string, not {boundary!r}"
    if boundary not in BOUNDARIES:
        return f"unknown boundary {boundary!r}"
    if "n" not in message:
        return f"the {boundary} report has no occurrence number 'n'"
    if type(n) is not int or n < 1:
        return f"the {boundary} report's 'n' must be a whole number >= 1, not {n!r}"
    return None


def bound_output(path: Path, head: int = OUTPUT_HEAD, tail: int = OUTPUT_TAIL) -> None:
    """Cut a child's output file to its first `head` and last `tail` bytes,
    with a line in between saying how many bytes were dropped."""
    try:
        size = path.lstat().st_size  # never through a link the child put there
        if size <= head + tail:
            return
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            return
        with open(fd, "r+b") as file:
            start = file.read(head)
            file.seek(size - tail)
            end = file.read(tail)
            note = f"\n[faultlab: {size - head - tail} byte(s) of output dropped here]\n"
            file.seek(0)
            file.write(start + note.encode() + end)
            file.truncate()
    except OSError:
        return
