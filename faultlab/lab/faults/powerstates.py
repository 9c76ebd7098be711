# The crash states the `power-loss` and `torn-write` faults can leave, derived
# offline from one recorded run.  A SIGKILL loses only what the process had not
# handed to the kernel; a power loss also drops every byte written after the
# file's last fsync, and a new file whose directory was never fsynced vanishes.
# The probe trace of the fault-free run says, fact by fact, what each file held
# and what was durable (create, dirsync, write, fsync, fsync-failed, truncate,
# cut); the log is append-only and deterministic, so the bytes it held at any
# moment are a prefix of its final bytes.  One reference run therefore yields every crash
# state at every `flush/written` occurrence without another process:
#   power-loss  each file cut back to its last fsynced size ("synced")
#   torn-write  as power-loss, but a prefix of the unsynced bytes survives
#               (`torn`), cut in the middle of a line, on a line boundary, and
#               at each 4 KiB page boundary inside the unsynced range
# This module owns the file rules and the states, pure functions of a trace and
# log bytes; checking the states and running the cases is powerloss.py's.
# It never imports the runtime.
from __future__ import annotations

import itertools
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from faultlab.lab.errors import LabUsageError
from faultlab.lab.process.reference import Reference
from faultlab.lab.read.jsonl import parse_log
from faultlab.lab.read.sqlite import parse_sqlite
from faultlab.lab.read.view import LogView

__all__ = [
    "FILE_FACTS",
    "PAGE",
    "WRITTEN",
    "CrashState",
    "FileState",
    "UnsupportedTrace",
    "crash_prefix",
    "derive_states",
    "file_states",
    "file_trace",
    "merge_facts",
    "representative",
    "states_at",
    "truth_log_path",
    "unsupported",
]

WRITTEN = "flush/written"
PAGE = 4096
# A batch of many lines (a long stream, or a target that never fsyncs) would
# give two states per line: beyond this many lines, evenly spaced ones are kept
# (always the first and the last).
MAX_LINES = 64


class UnsupportedTrace(Exception):
    """The trace cannot give this fault's crash states (FAULT_UNSUPPORTED)."""


@dataclass(frozen=True, slots=True)
class FileState:
    """What the trace says about one file at one point of the run.

    ``written``: bytes the kernel held; ``synced``: bytes an fsync made
    durable (never more than ``poisoned``); ``linked``: its directory entry
    is durable (it was not created in this run, or a ``dirsync`` of its
    directory followed its ``create``).
    """

    path: str
    written: int
    synced: int
    linked: bool
    created: bool = False
    # Set by a failed fsync (fact ``fsync-failed``): the durable size then,
    # above which no later fsync makes a byte durable (the kernel may have
    # dropped those dirty pages and marked them clean: "fsyncgate").  Cleared
    # by a truncate or cut to at most this size: bytes written after it are
    # new dirty pages a later fsync does write.
    poisoned: int | None = None

    @property
    def durable(self) -> int | None:
        """The file's size after a power loss; ``None``: the file vanishes."""
        return self.synced if self.linked else None


@dataclass(frozen=True, slots=True)
class CrashState:
    """One state the log may be found in after the fault.

    ``log`` is its bytes (``None``: the file vanished); ``trace`` is the probe
    trace up to and including the crash point (the ``flush/written``
    occurrence, marked parked); ``synced`` / ``written`` are the log's durable
    and written sizes at that point.  A SQLite state (``backend``) keeps in
    ``log`` the database with its WAL folded in (the lab reader's snapshot),
    and in ``files`` the session's files as the crash left them, which the
    target recovers (faultlab/lab/faults/sqlitestates.py).
    """

    label: str
    log: bytes | None
    trace: tuple[Mapping[str, Any], ...]
    synced: int = 0
    written: int = 0
    backend: str = "jsonl"
    files: tuple[tuple[str, bytes], ...] | None = None

    @property
    def vanished(self) -> bool:
        return self.log is None

    def view(self, path: str) -> LogView:
        """The log as the lab's reader sees it (a torn tail is cut)."""
        if self.log is None:
            return LogView(path, False, None, (), 0, 0, 0, ())
        if self.backend == "sqlite":
            return parse_sqlite(self.log, path)
        return parse_log(self.log, path)


# -- the ground truth: the system's file facts, or the target's -----------------

# The facts that describe files: under the syscall ground truth the target's
# own are replaced by the system's.
FILE_FACTS = frozenset(
    {"create", "dirsync", "write", "fsync", "truncate", "cut", "link", "rename", "unlink"}
)


def file_trace(reference: Reference) -> tuple[Mapping[str, Any], ...]:
    """The trace power-loss states are derived from: the probe trace with, under
    the syscall ground truth, its file facts replaced by the system's."""
    if reference.ground_truth != "syscalls":
        return reference.trace
    return merge_facts(reference.trace, reference.syscalls)


def merge_facts(
    trace: Sequence[Mapping[str, Any]], syscalls: Sequence[Mapping[str, Any]]
) -> tuple[Mapping[str, Any], ...]:
    """`trace` with its own file facts dropped and the system's (each with
    `after`, the number of reports before it) put in their place."""
    merged: list[Mapping[str, Any]] = []
    facts = list(syscalls)
    at = 0
    for index, message in enumerate(trace):
        while at < len(facts) and int(facts[at]["after"]) <= index:
            merged.append(facts[at])
            at += 1
        if message.get("fact") not in FILE_FACTS:
            merged.append(message)
    merged.extend(facts[at:])
    return tuple(merged)


def truth_log_path(reference: Reference) -> str | None:
    """The log's name in `file_trace`'s facts (None: the one the target names)."""
    if reference.ground_truth != "syscalls":
        return None
    return os.path.realpath(reference.log.path)



# -- the file rules ---------------------------------------------------------


def _same_dir(path: str, directory: str) -> bool:
    return os.path.normpath(os.path.dirname(path)) == os.path.normpath(directory)


def file_states(trace: Iterable[Mapping[str, Any]]) -> dict[str, FileState]:
    """Every file the trace's facts name, as it stands after the last message.

    A file first named by a fact other than ``create`` existed before the run:
    its entry is durable, and so are the bytes before its first reported write
    (``offset``) or fsync (``size``).
    """
    files: dict[str, FileState] = {}

    def known(path: str, size: int) -> FileState:
        return files.get(path) or FileState(path, size, size, linked=True)

    for message in trace:
        kind = message.get("fact")
        if kind is None:
            continue
        if kind == "dirsync":
            directory = str(message.get("dir", ""))
            for name, state in list(files.items()):
                if state.created and not state.linked and _same_dir(name, directory):
                    files[name] = replace(state, linked=True)
            continue
        path = message.get("file")
        if not isinstance(path, str):
            continue
        size = _int(message.get("size"))
        if kind == "create":
            files[path] = FileState(path, size, size, linked=False, created=True)
        elif kind == "write":
            offset, count = _int(message.get("offset")), _int(message.get("bytes"))
            state = known(path, offset)
            files[path] = replace(state, written=max(state.written, offset + count))
        elif kind == "fsync":
            state = known(path, size)
            synced = size if state.poisoned is None else min(size, state.poisoned)
            files[path] = replace(state, written=max(state.written, size), synced=synced)
        elif kind == "fsync-failed":
            # Every byte written since the last good fsync may be lost,
            # whatever later fsyncs of the file return.
            # A file first named here: nothing of it is known to be durable.
            state = files.get(path) or FileState(path, size, 0, linked=True)
            # (``synced`` is never above an earlier ``poisoned``: it is the floor.)
            files[path] = replace(state, written=max(state.written, size), poisoned=state.synced)
        elif kind in ("truncate", "cut"):
            # Not fsynced: the file is shorter now, its durable size no longer
            # than before (the fsync that follows a cut makes it exact).
            state = known(path, size)
            poisoned = state.poisoned
            if poisoned is not None and size <= poisoned:
                poisoned = None  # the possibly lost bytes are gone from the file
            files[path] = replace(
                state, written=size, synced=min(state.synced, size), poisoned=poisoned
            )
        elif kind in ("link", "rename"):
            # A new name for the source's bytes (as durable as they were): the
            # name itself is durable only once its directory is fsynced.
            source = str(message.get("source", ""))
            old = files.pop(source, None) if kind == "rename" else files.get(source)
            old = old or FileState(source, 0, 0, linked=True)
            files[path] = FileState(
                path, old.written, old.synced, linked=False, created=True, poisoned=old.poisoned
            )
        elif kind == "unlink":
            files.pop(path, None)
    return files


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def unsupported(trace: Sequence[Mapping[str, Any]]) -> str | None:
    """Why the trace cannot give power-loss states (``None``: it can)."""
    if not any(m.get("fact") == "write" for m in trace):
        return "the target reports no write facts, so the lab cannot tell unsynced bytes"
    if not any(m.get("boundary") == WRITTEN for m in trace):
        return f"the target never reaches {WRITTEN}, so there is no crash point to cut at"
    return None


def crash_prefix(
    trace: Sequence[Mapping[str, Any]], occurrence: str
) -> tuple[Mapping[str, Any], ...]:
    name, _, number = occurrence.partition("#")
    if name != WRITTEN:
        raise LabUsageError(f"{occurrence}: power-loss states are cut at {WRITTEN}#n only")
    if not (number or "1").isdigit() or int(number or "1") < 1:
        raise LabUsageError(f"{occurrence}: the occurrence number must be a whole number >= 1")
    n = int(number or "1")
    for index, message in enumerate(trace):
        if message.get("boundary") == WRITTEN and message.get("n") == n:
            return (*trace[:index], {**message, "parked": True})
    raise LabUsageError(f"the fault-free run never reached {WRITTEN}#{n}")


def _log_path(prefix: Sequence[Mapping[str, Any]]) -> str:
    file = prefix[-1].get("file")
    if isinstance(file, str):
        return file
    for message in reversed(prefix):  # a target that does not name it there
        if message.get("fact") in ("write", "create") and isinstance(message.get("file"), str):
            return str(message["file"])
    raise UnsupportedTrace(f"no write fact names the file written at {prefix[-1]}")


def states_at(
    prefix: Sequence[Mapping[str, Any]], final: bytes, *, torn: bool, log_path: str | None = None
) -> list[CrashState]:
    """The crash states of the log at the end of ``prefix`` (a trace cut just
    after a ``flush/written``), given bytes of which every content the log
    held is a prefix (its final bytes, or the file as a SIGKILL left it).
    ``log_path``: the log's name in the trace's facts (default: the file
    the ``flush/written`` report names)."""
    reason = unsupported(prefix)
    if reason is not None:
        raise UnsupportedTrace(reason)
    trace = tuple(prefix)
    log = file_states(trace).get(log_path or _log_path(trace))
    if log is None:
        raise UnsupportedTrace("no fact of the trace names the log file")
    if log.written > len(final):
        raise UnsupportedTrace(
            f"the trace says {log.written} bytes were written to {log.path}, "
            f"but the log has {len(final)}"
        )
    if log.durable is None:
        return [CrashState("vanished", None, trace, 0, log.written)]
    synced = CrashState("synced", final[: log.synced], trace, log.synced, log.written)
    if not torn:
        return [synced]
    cuts = _torn_offsets(final, log.synced, log.written)
    if not cuts:
        return [synced]  # nothing unsynced: the only state is the durable one
    return [
        CrashState(
            f"torn@{offset} ({', '.join(kinds)})", final[:offset], trace, log.synced, log.written
        )
        for offset, kinds in sorted(cuts.items())
    ]


def _torn_offsets(data: bytes, low: int, high: int) -> dict[int, list[str]]:
    """Byte offsets strictly inside (low, high) to cut the unsynced bytes at."""
    bounds = [low]
    at = data.find(b"\n", low, high)
    while at >= 0:
        bounds.append(at + 1)
        at = data.find(b"\n", at + 1, high)
    if bounds[-1] != high:
        bounds.append(high)  # a last write that did not end its line
    lines = list(itertools.pairwise(bounds))
    if len(lines) > MAX_LINES:
        step = (len(lines) - 1) / (MAX_LINES - 1)
        lines = [lines[round(i * step)] for i in range(MAX_LINES)]
    cuts: dict[int, list[str]] = {}
    for start, end in lines:
        middle = (start + end) // 2
        if start < middle < end:
            cuts.setdefault(middle, []).append("mid-line")
        if low < end < high:
            cuts.setdefault(end, []).append("line")
    for page in range((low // PAGE + 1) * PAGE, high, PAGE):
        cuts.setdefault(page, []).append("page")
    return cuts


def derive_states(reference: Reference, occurrence: str, *, torn: bool) -> list[CrashState]:
    """Every crash state of a power loss (`torn`: keeping a prefix of the
    unsynced bytes) at ``occurrence`` (``flush/written#k``),
    from the reference run's trace and final log bytes alone.  A SQLite run's
    log is not append-only: its states are rebuilt from the traced written
    bytes (sqlitestates.py; powerloss.py's `crash_states` picks the right one)."""
    if reference.backend == "sqlite":
        raise UnsupportedTrace("a SQLite log is not a prefix of its final bytes")
    prefix = crash_prefix(file_trace(reference), occurrence)
    return states_at(prefix, reference.log_bytes, torn=torn, log_path=truth_log_path(reference))


def representative(states: Sequence[CrashState], *, torn: bool) -> CrashState:
    """The state recovered by real processes: the synced one for power-loss,
    the last mid-line torn one for torn-write (a partial batch whose torn last
    line the loader must cut; for SQLite the last write cut at a page)."""
    if torn:
        cut = [s for s in states if "mid-line" in s.label] or [
            s for s in states if "(page)" in s.label
        ]
        if cut:
            return cut[-1]
    return states[0]
