# The lab's own reader of the JSONL session log, format version 1
# (docs/log-format.md).  It owns one question: what does this file durably say?
# It splits the bytes into the header, the events, a cut tail and a list of
# problems (bad header, committed damage, seq gaps and duplicates), and never
# raises on any input.  Seqs must run contiguously from 0; a corrupt committed
# line may have held one seq, so it excuses a skip of one in the next good line.
# It is written from the format description, not from the runtime's reader, on
# purpose: the oracle must not share the runtime's bugs.  Every line is decoded
# by one `loads` function (orjson by default; `faultlab bench` passes the
# standard library's to compare).
#
# Speed: the line-by-line loop of `parse_log` is the reference.  In front of it
# the bulk fast path (fastpath.py, `read_good_prefix`) takes the longest prefix
# of lines that are valid events whose seq equals their index, the lines the
# reference would turn into events without a problem, so the reference resumes
# after them and keeps all its diagnostics.  The value types are in view.py,
# the checks of one line in lines.py.
from __future__ import annotations

import os
import stat
from pathlib import Path

import orjson

from faultlab.lab.read.fastpath import read_good_prefix
from faultlab.lab.read.identity import with_identity_problems
from faultlab.lab.read.lines import Loads, decode_event, header_problem
from faultlab.lab.read.view import (
    BAD_HEADER,
    CORRUPT_COMMITTED_LOG,
    SEQ_DUPLICATE,
    SEQ_GAP,
    LogEvent,
    LogProblem,
    LogView,
)
from faultlab.userfiles import MAX_LOG_BYTES, UserFileError, read_bytes

__all__ = ["parse_log", "read_log_file"]

_NL = b"\n"


class _LaterTurnEnd:
    """Lazily finds, once, the start of the last complete line that is a valid
    ``turn/end`` event, scanning backwards no further than the first bad line.
    Every later bad line lies after that first one, so one scan answers all."""

    __slots__ = ("_data", "_found", "_loads", "_start")

    def __init__(self, data: bytes, loads: Loads) -> None:
        self._data = data
        self._loads = loads
        self._found: tuple[int, int] | None = None  # (offset, line) of that turn/end
        self._start = -1  # -1: not scanned yet

    def after(self, offset: int, line: int) -> tuple[int, int] | None:
        if self._start < 0:
            self._start = offset
            self._found = self._scan(offset, line)
        found = self._found
        return found if found is not None and found[0] > offset else None

    def _scan(self, floor: int, floor_line: int) -> tuple[int, int] | None:
        data = self._data
        end = data.rfind(_NL)
        while end > floor:
            start = data.rfind(_NL, 0, end) + 1
            if start <= floor:
                return None
            decoded = decode_event(data[start:end], self._loads)
            if isinstance(decoded, dict) and decoded["type"] == "turn/end":
                # Line numbers are only needed for the message: count once.
                return start, floor_line + data.count(_NL, floor, start)
            end = start - 1
        return None


# --- the reader ------------------------------------------------------------------------


def parse_log(data: bytes, path: str, *, loads: Loads = orjson.loads, fast: bool = True) -> LogView:
    """Read a whole log from its bytes, each line decoded with ``loads``.  Never
    raises (for a ``loads`` that signals a bad line with ValueError, as orjson's
    and the standard library's do).  ``fast=False`` skips the bulk fast path
    and reads every line in the reference loop (same result, for tests)."""
    size = len(data)
    header_end = data.find(_NL)
    if header_end < 0:
        return _bad_header(path, True, size, "no complete session header line")
    header = header_problem(data[:header_end], loads)
    if isinstance(header, str):
        return _bad_header(path, True, size, header)

    events: list[LogEvent] = []
    pos = header_end + 1
    if fast:
        # Good events with seqs 0..n-1 leave the loop's state at exactly this.
        events, pos = read_good_prefix(data, header_end, loads)
    problems: list[LogProblem] = []
    later_end = _LaterTurnEnd(data, loads)
    expected = len(events)
    unread = 0  # corrupt lines since the last good event
    line = 2 + len(events)
    valid_size = pos
    cut = ""
    while True:
        end = data.find(_NL, pos)
        if end < 0:
            if pos < size:  # whatever follows the last newline is a torn tail
                cut = f"a torn tail (line {line} has no newline: a torn write)"
            break
        decoded = decode_event(data[pos:end], loads)
        if isinstance(decoded, str):
            committed = later_end.after(pos, line)
            if committed is None:  # damage after the last completed turn: cut from here on
                cut = (f"line {line} is a whole line but damaged ({decoded}), "
                       "and no completed turn follows it")  # fmt: skip
                break
            what = (
                f"line {line} (byte {pos}): {decoded}; the turn/end at line {committed[1]} "
                f"(byte {committed[0]}) after it was committed"
            )
            problems.append(LogProblem(CORRUPT_COMMITTED_LOG, line, pos, what))
            unread += 1
        else:
            seq: int = decoded["seq"]
            # Each corrupt line since the last good one may have held one seq.
            if seq < expected or seq > expected + unread:
                code, kind = (SEQ_GAP, "gap") if seq > expected else (SEQ_DUPLICATE, "duplicate")
                wanted = f"{expected}" if not unread else f"{expected}..{expected + unread}"
                what = (
                    f"line {line} (byte {pos}): seq {kind}: seq {seq} where {wanted} was expected"
                )
                problems.append(LogProblem(code, line, pos, what))
            expected = max(expected, seq + 1)
            unread = 0
            events.append(
                LogEvent(
                    seq=seq,
                    type=decoded["type"],
                    time=float(decoded["time"]),
                    data=decoded["data"],
                    line=line,
                    offset=pos,
                )
            )
        pos = end + 1
        valid_size = pos
        line += 1
    return LogView(
        path=path,
        exists=True,
        header=header,
        events=tuple(events),
        size=size,
        valid_size=valid_size,
        torn_bytes=size - valid_size,
        problems=with_identity_problems(problems, events),
        cut=cut,
    )


def read_log_file(path: str | Path, *, loads: Loads = orjson.loads) -> LogView:
    """Read the log at ``path`` (lines decoded with ``loads``).  A missing file is
    ``exists=False`` with no problems; a directory or an unreadable file is a
    ``BAD_HEADER`` problem."""
    name = str(path)
    where = Path(path)
    try:
        is_dir = stat.S_ISDIR(os.stat(where).st_mode)
    except (FileNotFoundError, NotADirectoryError):
        return LogView(name, False, None, (), 0, 0, 0, ())
    except (OSError, ValueError) as exc:  # a loop, an embedded NUL byte
        return _bad_header(name, _exists(where), 0, f"cannot read the session log ({exc})")
    if is_dir:
        return _bad_header(name, True, 0, "the path is a directory, not a session log file")
    try:  # bounded, regular files only, never blocking (faultlab.userfiles)
        data = read_bytes(where, what="session log", limit=MAX_LOG_BYTES)
    except UserFileError as exc:
        return _bad_header(name, True, 0, f"cannot read the session log ({exc.problem})")
    return parse_log(data, name, loads=loads)


def _exists(where: Path) -> bool:
    try:
        return where.exists()
    except (OSError, ValueError):
        return False


def _bad_header(path: str, exists: bool, size: int, what: str) -> LogView:
    problem = LogProblem(BAD_HEADER, 1, 0, f"line 1 (byte 0): {what}")
    return LogView(path, exists, None, (), size, 0, 0, (problem,))
