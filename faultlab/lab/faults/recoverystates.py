# Power loss during recovery, as states derived offline: what the session's
# files durably hold at each point of one recovery child's run (the repair
# child, `--resume --repair-only`, or the resumed child, `--resume`) where a
# power loss may land.  A recovery child starts on files the lab put there
# (every byte on disk), so, unlike the fault-free run's states
# (powerstates.py), its log is not a prefix of one final file: load may cut a
# torn tail and append after the cut, and the bytes it cut must be kept in a
# cut file first.  The states are therefore rebuilt from what the child did,
# write by write: the bytes of each write from the system-call trace (or,
# under the target's own facts, from the file as the child left it, which an
# append-only log allows), truncations and renames applied in order; the
# durable part of each file, and whether its name is durable, follow the file
# rules of `powerstates.file_states`.
#
# Crash points: every boundary the child reached (it is parked there: what it
# reported there is not yet a claim), after every fact that can shrink a file
# (a truncate, a cut, a rename or unlink: the one kind of moment at which a
# durable byte can be lost between two boundaries), and after its exit.  This
# module never imports the runtime.
from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from faultlab.lab.faults.powerstates import FILE_FACTS, file_states, merge_facts

__all__ = ["RecoveryRun", "RecoveryState", "recovery_states"]

# Facts after which a durable byte may be gone.
_SHRINKING = frozenset({"truncate", "cut", "rename", "unlink"})
# Fields of a fact that name a file or a directory.
_PATH_FIELDS = ("file", "source", "dir", "keptIn")


@dataclass(frozen=True, slots=True)
class RecoveryRun:
    """One recovery child of a case as the lab recorded it.

    ``start`` / ``final``: the session's files (real path, bytes) when the
    child started and after it exited; ``log``: the log's real path.  Under
    ``ground_truth`` "syscalls", ``syscalls`` are the file facts its system
    calls show (placed by ``after`` among ``trace``'s reports) and
    ``written`` the bytes of each traced write; under "facts", the child's
    own file facts are the truth (``note`` says why)."""

    name: str
    trace: tuple[Mapping[str, Any], ...]
    start: tuple[tuple[str, bytes], ...]
    final: tuple[tuple[str, bytes], ...]
    log: str
    status: int
    ground_truth: str = "facts"
    syscalls: tuple[Mapping[str, Any], ...] = ()
    written: tuple[bytes, ...] = ()
    note: str = ""

    @property
    def facts(self) -> tuple[Mapping[str, Any], ...]:
        """The trace the states come from: the probe's reports with, under
        the syscall ground truth, the system's file facts in place of the
        target's own; every path made real."""
        if self.ground_truth == "syscalls":
            return tuple(_real_paths(m) for m in merge_facts(self.trace, self.syscalls))
        own = tuple(_real_paths(m) for m in self.trace)
        return tuple(_claimed_kept(own, dict(self.final)))


@dataclass(frozen=True, slots=True)
class RecoveryState:
    """The session's files after a power loss at one point of a recovery run.

    ``trace``: the child's trace up to that point (a boundary it is parked
    at is marked ``parked``: not passed, so not a claim); ``files``: every
    file whose name is durable, with its durable bytes (a log that vanished
    is absent)."""

    label: str
    trace: tuple[Mapping[str, Any], ...]
    files: Mapping[str, bytes]


def _real_paths(message: Mapping[str, Any]) -> Mapping[str, Any]:
    if "fact" not in message or not any(isinstance(message.get(k), str) for k in _PATH_FIELDS):
        return message
    real = dict(message)
    for key in _PATH_FIELDS:
        if isinstance(real.get(key), str) and real[key]:
            real[key] = os.path.realpath(real[key])
    return real


def _claimed_kept(
    trace: Sequence[Mapping[str, Any]], final: Mapping[str, bytes]
) -> Iterator[Mapping[str, Any]]:
    """Under the target's own facts: a `cut` fact says its `keptIn` file holds
    the cut bytes durably (docs/probe-protocol.md 3.2), and a target need not
    report that file's own writes; unless it did, the claim stands for them."""
    described = {m.get("file") for m in trace if m.get("fact") in ("create", "write", "fsync")}
    for message in trace:
        kept = message.get("keptIn")
        if message.get("fact") == "cut" and isinstance(kept, str) and kept not in described:
            described.add(kept)
            size = len(final.get(kept, b""))  # as the target left it
            yield {"fact": "create", "file": kept, "size": size, "claimed": True}
            yield {"fact": "fsync", "file": kept, "size": size, "claimed": True}
            yield {"fact": "dirsync", "dir": os.path.dirname(kept), "claimed": True}
        yield message


class _Contents:
    """The bytes each file holds as the run goes on, fact by fact."""

    def __init__(self, run: RecoveryRun) -> None:
        self.now = {path: bytearray(data) for path, data in run.start}
        self._final = dict(run.final)
        self._written = run.written

    def take(self, message: Mapping[str, Any]) -> None:
        kind, path = message.get("fact"), message.get("file")
        if kind not in FILE_FACTS or not isinstance(path, str):
            return
        size = _int(message.get("size"))
        if kind == "write":
            offset, count = _int(message.get("offset")), _int(message.get("bytes"))
            data = self._data(message.get("w"), path, offset, count)
            content = self.now.setdefault(path, bytearray())
            if len(content) < offset:
                content.extend(bytes(offset - len(content)))
            content[offset : offset + count] = data
        elif kind == "create":  # the file now exists with `size` bytes (0 at an O_CREAT)
            self.now[path] = bytearray(self._final.get(path, b"")[:size].ljust(size, b"\0"))
        elif kind in ("truncate", "cut"):
            content = self.now.setdefault(path, bytearray())
            del content[size:]
            content.extend(bytes(size - len(content)))
        elif kind in ("link", "rename"):
            source = str(message.get("source", ""))
            moved = self.now.pop(source, bytearray()) if kind == "rename" else self.now.get(source)
            self.now[path] = bytearray(moved or b"")
        elif kind == "unlink":
            self.now.pop(path, None)

    def _data(self, index: object, path: str, offset: int, count: int) -> bytes:
        if isinstance(index, int) and 0 <= index < len(self._written):
            data = self._written[index]
            if len(data) == count:
                return data
        # Not traced (or too long to be kept): an append-only file still
        # holds those bytes at the end of the run.
        return self._final.get(path, b"")[offset : offset + count].ljust(count, b"\0")

    def durable(self, trace: Iterable[Mapping[str, Any]]) -> dict[str, bytes]:
        """Each file whose name is durable after `trace`, with its durable
        bytes: what an fsync made durable of what it holds now (an
        append-only file rewrites nothing below its durable size)."""
        return {
            path: bytes(self.now.get(path, b"")[: state.synced])
            for path, state in file_states(trace).items()
            if state.durable is not None
        }


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _seeded(run: RecoveryRun) -> list[Mapping[str, Any]]:
    """The files the child started with, every byte durable (the lab wrote
    them before it started), as facts `file_states` reads."""
    return [{"fact": "fsync", "file": path, "size": len(data)} for path, data in run.start]


def _points(trace: Sequence[Mapping[str, Any]]) -> Iterator[tuple[int, str]]:
    """(index, label): a power loss with the first `index` messages done (a
    boundary's report is then the parked one), in trace order."""
    for index, message in enumerate(trace):
        if "boundary" in message:
            yield index, f"at {message['boundary']}#{message.get('n')}"
        elif message.get("fact") in _SHRINKING:
            shown = os.path.basename(str(message.get("file", "")))
            yield index + 1, f"after its {message['fact']} of {shown} (message {index + 1})"
    yield len(trace), "after it exited"


def recovery_states(run: RecoveryRun) -> list[RecoveryState]:
    """Every power-loss state of one recovery run (see the top of the module)."""
    trace = run.facts
    seeded = _seeded(run)
    contents = _Contents(run)
    states: list[RecoveryState] = []
    done = 0
    durable: dict[str, bytes] | None = None
    for index, label in _points(trace):
        while done < index:
            if trace[done].get("fact") in FILE_FACTS:
                contents.take(trace[done])
                durable = None  # the files changed
            done += 1
        if durable is None:
            durable = contents.durable([*seeded, *trace[:index]])
        prefix = trace[:index]
        if index < len(trace) and "boundary" in trace[index]:
            prefix = (*prefix, {**trace[index], "parked": True})
        states.append(RecoveryState(f"{run.name} child, power loss {label}", prefix, durable))
    return states
