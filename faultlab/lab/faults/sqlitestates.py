# The crash states of the SQLite backend under `power-loss` and `torn-write`,
# rebuilt from the written bytes of the reference run's system-call trace.
# A SQLite database and its -wal/-journal are written in place (pwrite64), so
# a crash state is not a prefix of the final file (the JSONL rule of
# powerstates.py): this module replays the traced writes of every file of the
# session onto empty files, up to the crash point, keeping per file what its
# last fsync made durable.  The crash point of `flush/written#k` is the
# boundary itself plus the system calls after it up to the next fsync or
# probe report: the SQLite backend reports flush/written once the rows are
# inserted into the open transaction, and SQLite writes them (WAL frames) at
# COMMIT, just before it fsyncs them, so this is the moment a commit's bytes
# are written and not yet synced.
#   power-loss  each file as its last fsync left it (a file created and never
#               dir-synced vanishes)
#   torn-write  as power-loss, plus a prefix of the unsynced writes, in the
#               order they were made: cut after each unsynced write call and
#               at the first 4 KiB page boundary inside each one
# The files the target recovers are the database, its -wal and its -journal
# (the -shm is a cache SQLite rebuilds from the WAL; the lock file and temp
# files are not state).  Pure functions of a trace and its bytes; this module
# never imports the runtime.
from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from faultlab.lab.faults.powerstates import (
    PAGE,
    CrashState,
    UnsupportedTrace,
    crash_prefix,
    file_trace,
)
from faultlab.lab.process.reference import Reference
from faultlab.lab.read.sqlite import snapshot

__all__ = ["KEPT_SUFFIXES", "MAX_CUTS", "Replayed", "crash_window", "replay", "sqlite_states"]

# The files of a session a crash state is made of: the database name plus these.
KEPT_SUFFIXES = ("", "-wal", "-journal")
# At most this many cuts after whole write calls (evenly spaced, the last
# always kept): a target that never fsyncs has every write unsynced.
MAX_CUTS = 16
_SYNCS = ("fsync", "fsync-failed")


@dataclass
class _File:
    current: bytearray
    durable: bytes
    linked: bool  # its directory entry survives a power loss


@dataclass(frozen=True, slots=True)
class _Op:
    """One unsynced change: a write (``data`` at ``offset``) or a truncate."""

    path: str
    offset: int
    data: bytes | None  # None: truncate to ``offset``


@dataclass
class Replayed:
    """The files at the crash point: what each held, what was durable, and
    the unsynced changes of the surviving files in the order they were made."""

    files: dict[str, _File] = field(default_factory=dict)
    pending: list[_Op] = field(default_factory=list)

    def durable(self) -> dict[str, bytes]:
        """Every file a power loss keeps, as its last fsync left it."""
        return {path: f.durable for path, f in self.files.items() if f.linked}


def _apply(content: bytearray, op: _Op) -> None:
    if op.data is None:  # a truncate: shorter, or longer with zeros
        del content[op.offset :]
        content.extend(bytes(op.offset - len(content)))
        return
    if len(content) < op.offset:
        content.extend(bytes(op.offset - len(content)))
    content[op.offset : op.offset + len(op.data)] = op.data


def replay(facts: Sequence[Mapping[str, Any]], data: Sequence[bytes]) -> Replayed:
    """Replay the file facts (strace's, with ``w`` indexing ``data``) in order.
    A file first named by a write existed before the run with unknown bytes:
    the trace cannot rebuild it (UnsupportedTrace)."""
    out = Replayed()
    files = out.files

    def drop_pending(path: str) -> None:
        out.pending = [op for op in out.pending if op.path != path]

    for fact in facts:
        kind, path = fact.get("fact"), fact.get("file")
        if kind == "dirsync":
            directory = os.path.normpath(str(fact.get("dir", "")))
            for name, state in files.items():
                if os.path.dirname(name) == directory:
                    state.linked = True
            continue
        if not isinstance(path, str):
            continue
        if kind == "create":
            files[path] = _File(bytearray(), b"", linked=False)
            drop_pending(path)
            continue
        if kind == "unlink":
            files.pop(path, None)
            drop_pending(path)
            continue
        if kind in ("link", "rename"):
            source = str(fact.get("source", ""))
            old = files.pop(source, None) if kind == "rename" else files.get(source)
            if old is None:
                raise UnsupportedTrace(f"{path}: named from {source}, which the trace never wrote")
            files[path] = _File(bytearray(old.current), old.durable, linked=False)
            moved = [_Op(path, op.offset, op.data) for op in out.pending if op.path == source]
            if kind == "rename":
                drop_pending(source)
            out.pending += moved
            continue
        found = files.get(path)
        if found is None:
            raise UnsupportedTrace(f"{path}: the run changed a file it did not create")
        state = found
        if kind == "write":
            index = fact.get("w")
            if not isinstance(index, int) or not 0 <= index < len(data):
                count = fact.get("bytes")
                raise UnsupportedTrace(f"{path}: the trace kept no bytes of a {count}-byte write")
            op = _Op(path, int(fact.get("offset", 0)), data[index])
        elif kind == "truncate":
            op = _Op(path, int(fact.get("size", 0)), None)
        elif kind in _SYNCS:
            if kind == "fsync":
                state.durable = bytes(state.current)
                drop_pending(path)
            continue  # a failed fsync made nothing durable
        else:
            continue
        _apply(state.current, op)
        out.pending.append(op)
    return out


def crash_window(
    trace: Sequence[Mapping[str, Any]], occurrence: str
) -> tuple[tuple[Mapping[str, Any], ...], list[Mapping[str, Any]]]:
    """The oracle's trace up to ``occurrence`` (parked), and the strace facts
    that follow it up to the next fsync or probe report (the commit's writes)."""
    prefix = crash_prefix(trace, occurrence)
    after = list(trace[len(prefix) :])
    window: list[Mapping[str, Any]] = []
    for message in after:
        if message.get("via") != "strace" or message.get("fact") in _SYNCS:
            break
        window.append(message)
    return prefix, window


def _cuts(pending: Sequence[_Op]) -> list[tuple[str, int, int | None]]:
    """(label, whole ops kept, bytes of the next write kept or None)."""
    total = len(pending)
    wholes = list(range(1, total + 1))
    if len(wholes) > MAX_CUTS:
        step = (total - 1) / (MAX_CUTS - 1)
        wholes = sorted({1 + round(i * step) for i in range(MAX_CUTS)})
    cuts: list[tuple[str, int, int | None]] = []
    for k in wholes:
        cuts.append((f"torn@write{k}/{total}", k, None))
        op = pending[k - 1]
        if op.data is None:
            continue
        page = (op.offset // PAGE + 1) * PAGE
        if page < op.offset + len(op.data):
            cuts.append((f"torn@write{k}/{total}+{page} (page)", k - 1, page - op.offset))
    return cuts


def _state(
    label: str, files: dict[str, bytes], root: str, db: str, trace: tuple[Mapping[str, Any], ...]
) -> CrashState:
    kept = [(os.path.relpath(path, root), content) for path, content in sorted(files.items())]
    log: bytes | None = None
    if any(name == db for name, _ in kept):
        with tempfile.TemporaryDirectory(prefix="faultlab-sqlite-state-") as work:
            for name, content in kept:
                Path(work, name).write_bytes(content)
            log = snapshot(Path(work, db))
    size = len(dict(kept).get(db, b""))
    return CrashState(label, log, trace, size, size, backend="sqlite", files=tuple(kept))


def sqlite_states(reference: Reference, occurrence: str, *, torn: bool) -> list[CrashState]:
    """Every crash state of a power loss (`torn`: keeping a prefix of the
    unsynced writes) at ``occurrence`` of a SQLite reference
    run, rebuilt from its traced writes (needs the system-call ground truth)."""
    if reference.ground_truth != "syscalls":
        raise UnsupportedTrace(
            "the SQLite states are rebuilt from the traced written bytes: "
            f"no system-call trace ({reference.ground_truth_note or 'tracing is off'})"
        )
    prefix, window = crash_window(file_trace(reference), occurrence)
    facts = [m for m in prefix if m.get("via") == "strace"] + window
    replayed = replay(facts, reference.written)
    db_path = os.path.realpath(reference.log.path)
    root, db = os.path.dirname(db_path), os.path.basename(db_path)
    names = {os.path.join(root, db + suffix) for suffix in KEPT_SUFFIXES}
    durable = {path: content for path, content in replayed.durable().items() if path in names}
    synced = _state("synced", durable, root, db, prefix)
    if synced.log is None:
        synced = CrashState("vanished", None, prefix, backend="sqlite", files=synced.files)
    if not torn:
        return [synced]
    pending = [op for op in replayed.pending if op.path in durable]
    if not pending:
        return [synced]
    states = []
    for label, whole, part in _cuts(pending):
        files = {path: bytearray(content) for path, content in durable.items()}
        for op in pending[:whole]:
            _apply(files[op.path], op)
        if part is not None:
            op = pending[whole]
            assert op.data is not None  # a page cut is made only inside a write
            _apply(files[op.path], _Op(op.path, op.offset, op.data[:part]))
        states.append(_state(label, {p: bytes(c) for p, c in files.items()}, root, db, prefix))
    return states
