# Ground truth from the system, not the target.  When the reference run was
# traced (faultlab/lab/process/syscalls.py), the file facts power-loss and
# torn-write states are derived from are the ones its system calls show, put
# in place among the probe's boundary reports; the file facts the target
# reported itself are dropped from that trace and checked against the system
# calls instead: every disagreement is a violation with its own code (a
# reported fsync made on another file or never made, a reported write or
# size that is not what was written, a file renamed or linked into place
# before its bytes were fsynced).  Untraced, the target's own facts are the
# ground truth, as before (the fallback; the report says which was used).
from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from faultlab.lab.faults.powerstates import FILE_FACTS, file_states
from faultlab.lab.oracle.codes import Violation
from faultlab.lab.process.reference import Reference

__all__ = ["check_reported_facts", "fact_disagreements", "reported_disagreements"]


def _real(path: object) -> str | None:
    return os.path.realpath(path) if isinstance(path, str) and path else None


def _state_at(facts: Sequence[dict[str, Any]], upto: int) -> dict[str, tuple[int, int]]:
    """(written, synced) per file after the system facts with ``after <= upto``."""
    states = file_states(f for f in facts if int(f["after"]) <= upto)
    return {path: (s.written, s.synced) for path, s in states.items()}


def _violation(code: str, index: int, message: str, **evidence: Any) -> tuple[int, Violation]:
    return index, Violation(code, message, {"at": index, "groundTruth": "syscalls", **evidence})


def _check_one(
    index: int, message: Mapping[str, Any], facts: Sequence[dict[str, Any]]
) -> list[tuple[int, Violation]]:
    """One reported file fact against the system calls made between the
    report before it and the report after it (a target may report a call
    just before or just after making it)."""
    kind = message.get("fact") or message.get("boundary")
    window = [f for f in facts if index <= int(f["after"]) <= index + 1]
    state = _state_at(facts, index + 1)
    file = _real(message.get("file"))
    size = message.get("size")
    said = f"reported {kind} (trace message {index + 1})"
    if kind == "fsync" and file is not None:
        synced = [f for f in window if f["fact"] == "fsync"]
        if any(f["file"] == file for f in synced):
            if isinstance(size, int) and state.get(file, (0, 0))[1] != size:
                real = state.get(file, (0, 0))[1]
                text = f"{said} of {file} at size {size}: the system calls synced {real} bytes"
                return [_violation("REPORTED_SIZE_WRONG", index, text,
                                   file=file, reported=size, traced=real)]  # fmt: skip
            return []
        if isinstance(size, int) and state.get(file, (0, 0))[1] == size:
            # No fsync here, but the bytes are durable: written through an
            # O_SYNC/O_DSYNC descriptor (or synced already).  The claim holds.
            return []
        if synced:
            others = sorted({str(f["file"]) for f in synced})
            return [_violation("FSYNC_WRONG_FILE", index,
                               f"{said} of {file}: the fsync system call went to "
                               f"{', '.join(others)}", file=file, fsynced=others)]  # fmt: skip
        return [_violation("FSYNC_NOT_MADE", index,
                           f"{said} of {file}: no fsync or fdatasync system call was made",
                           file=file)]  # fmt: skip
    if kind == "write" and file is not None:
        offset, count = message.get("offset"), message.get("bytes")
        writes = [f for f in window if f["fact"] == "write" and f["file"] == file]
        if any(f["offset"] == offset and f["bytes"] == count for f in writes):
            return []
        if writes:
            traced = [(f["offset"], f["bytes"]) for f in writes]
            return [_violation("REPORTED_SIZE_WRONG", index,
                               f"{said} of {count} bytes at {offset} to {file}: the system calls "
                               f"wrote (offset, bytes) {traced}", file=file,
                               reported=[offset, count], traced=traced)]  # fmt: skip
        return [_violation("WRITE_NOT_MADE", index,
                           f"{said} of {count} bytes to {file}: no write system call reached it",
                           file=file)]  # fmt: skip
    if kind == "dirsync":
        directory = _real(message.get("dir"))
        if any(f["fact"] == "dirsync" and f["dir"] == directory for f in window):
            return []
        return [_violation("DIRSYNC_NOT_MADE", index,
                           f"{said} of {directory}: no fsync system call on that directory",
                           dir=directory)]  # fmt: skip
    truncated = any(f["fact"] == "truncate" and f["file"] == file for f in window)
    if kind in ("create", "truncate", "cut") and file is not None and (
        file not in state or (kind != "create" and not truncated)
    ):
        return [_violation("FILE_FACT_NOT_MADE", index,
                               f"{said} of {file}: the system calls show no such {kind}",
                               file=file)]  # fmt: skip
    if kind in ("create", "truncate", "cut", "flush/written") and file is not None:
        written = state.get(file, (0, 0))[0]
        if isinstance(size, int) and file in state and written != size:
            text = f"{said} of {file} at size {size}: the system calls had written {written} bytes"
            return [_violation("REPORTED_SIZE_WRONG", index, text,
                               file=file, reported=size, traced=written)]  # fmt: skip
    return []


def _renames(facts: Sequence[dict[str, Any]]) -> list[tuple[int, Violation]]:
    """Files created in this run and put in place before their bytes were synced."""
    found = []
    for position, fact in enumerate(facts):
        if fact["fact"] not in ("link", "rename"):
            continue
        source = file_states(facts[:position]).get(str(fact.get("source")))
        if source is None or not source.created or source.synced >= source.written:
            continue
        index = int(fact["after"])
        found.append(_violation(
            "RENAME_BEFORE_FSYNC", index,
            f"{fact['source']} was {fact['fact']}ed to {fact['file']} with "
            f"{source.written - source.synced} of its {source.written} bytes never fsynced",
            file=fact["file"], source=fact["source"], written=source.written,
            synced=source.synced,
        ))  # fmt: skip
    return found


def reported_disagreements(reference: Reference) -> list[tuple[int, Violation]]:
    """Every disagreement of the target's reported file facts with its system
    calls, with the index of the trace message it concerns (empty when the
    reference was not traced)."""
    if reference.ground_truth != "syscalls" or reference.trace_unsupported:
        return []  # nothing to check against (a trace the model cannot judge: TRACE_UNSUPPORTED)
    return fact_disagreements(reference.trace, reference.syscalls)


def fact_disagreements(
    trace: Sequence[Mapping[str, Any]], syscalls: Sequence[Mapping[str, Any]]
) -> list[tuple[int, Violation]]:
    """Every disagreement of the file facts a run reported (`trace`) with its
    system calls (`syscalls`, each placed by `after`; a recovery run's files
    that were there before it are given as facts with `after` -1)."""
    facts = [dict(f) for f in syscalls]
    found: list[tuple[int, Violation]] = []
    for index, message in enumerate(trace):
        if message.get("fact") in FILE_FACTS or message.get("boundary") == "flush/written":
            found += _check_one(index, message, facts)
    found += _renames(facts)
    return sorted(found, key=lambda item: item[0])


def check_reported_facts(reference: Reference, upto: int | None = None) -> list[Violation]:
    """The disagreements at or before trace message ``upto`` (None: all)."""
    return [v for i, v in reported_disagreements(reference) if upto is None or i <= upto]
