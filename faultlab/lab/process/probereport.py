# What a child sends and leaves, checked and bounded: one decoded probe
# report is checked against the protocol (`report_problem`), a report line has
# a length bound (`MAX_REPORT_LINE`), and a child's output file is cut to its
# head and tail (`bound_output`).  The child itself is faultlab/lab/process/spawn.py.
from __future__ import annotations

from pathlib import Path

from faultlab.probe import BOUNDARIES

__all__ = ["MAX_REPORT_LINE", "OUTPUT_HEAD", "OUTPUT_TAIL", "bound_output", "report_problem"]

# A probe report is one short JSON line; a longer one is refused (and the
# buffer dropped) so a target cannot grow the lab's memory without bound.
MAX_REPORT_LINE = 1 << 20
# What is kept of a child's stdout+stderr file: its first and last bytes,
# with a note of what was dropped between them (docs/cli.md "Limits").
OUTPUT_HEAD = 64 << 10
OUTPUT_TAIL = 64 << 10


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
        size = path.stat().st_size
        if size <= head + tail:
            return
        with open(path, "r+b") as file:
            start = file.read(head)
            file.seek(size - tail)
            end = file.read(tail)
            note = f"\n[faultlab: {size - head - tail} byte(s) of output dropped here]\n"
            file.seek(0)
            file.write(start + note.encode() + end)
            file.truncate()
    except OSError:
        return
