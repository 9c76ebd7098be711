# The JSONL backend: one session per directory (`session.jsonl`), one
# `os.write` per batch on an O_APPEND fd then `fsync`, truncate-back on any
# failure so a retry cannot duplicate seqs, atomic creation of new files
# (temp + fsync + link + directory fsync) and an exclusive writer lock.
from __future__ import annotations

import itertools
import os
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

from faultlab.probe import PROBE
from faultlab.runtime.backends.base import (
    LoadedLog,
    SessionCorruptError,
    SessionMissingError,
    SessionSummary,
)
from faultlab.runtime.backends.jsonl_format import encode_events, encode_header, read_log
from faultlab.runtime.backends.writerlock import (
    InjectedFailures,
    resumes_existing,
    take_writer_lock,
)
from faultlab.runtime.events import Event

__all__ = ["LOG_NAME", "JsonlBackend"]

LOG_NAME = "session.jsonl"
LOCK_NAME = "session.jsonl.lock"


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    if PROBE.enabled:
        PROBE.fact("dirsync", dir=str(directory))


class JsonlBackend:
    """Durable JSONL storage of the session kept in `directory`."""

    kind = "jsonl"

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        self.path = self.directory / LOG_NAME
        self._fd = -1
        self._lock_fd = -1
        self._next_seq = 0
        self._written_size = 0
        self._synced_size = 0
        self._synced_seq = 0
        self._injected = InjectedFailures()

    @property
    def location(self) -> str:
        return str(self.path)

    # -- opening -----------------------------------------------------------

    def open(self, *, session_id: str | None, create: bool, resume: bool) -> LoadedLog:
        """Lock the session and load it, creating it when allowed and missing."""
        self.directory.mkdir(parents=True, exist_ok=True)
        self._lock()
        try:
            if resumes_existing(self.path, create=create, resume=resume, missing="session log"):
                loaded = self._open_existing()
            else:
                loaded = self._create(session_id or uuid.uuid4().hex)
        except BaseException:
            self.close()
            raise
        self._next_seq = self._synced_seq = len(loaded.events)
        self._written_size = self._synced_size = loaded.valid_size
        return loaded

    def _lock(self) -> None:
        self._lock_fd = take_writer_lock(self.directory / LOCK_NAME, self.path)

    def _create(self, session_id: str) -> LoadedLog:
        header = encode_header(session_id, time.time())
        temp = self.directory / f".{LOG_NAME}.{os.getpid()}.tmp"
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, header)
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(temp, self.path)
        finally:
            os.unlink(temp)
        if PROBE.enabled:
            PROBE.fact("create", file=str(self.path), size=len(header))
        _fsync_dir(self.directory)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
        return read_log(header, str(self.path))

    def _open_existing(self) -> LoadedLog:
        loaded = read_log(self.path.read_bytes(), str(self.path))
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
        if loaded.cut_bytes:
            self._cut_tail(loaded.valid_size)
        return loaded

    def _cut_tail(self, valid_size: int) -> None:
        # Keep the cut bytes beside the log before truncating: loading a
        # damaged log must lose nothing a person may want to look at.
        with open(self.path, "rb") as source:
            source.seek(valid_size)
            cut = source.read()
        fd, keep = self._new_cut_file(valid_size)
        try:
            os.write(fd, cut)
            os.fsync(fd)
        finally:
            os.close(fd)
        _fsync_dir(self.directory)  # the kept bytes are durable before the log loses them
        if PROBE.enabled:  # a crash from here on finds the bytes in the cut file
            PROBE.reach("tail/kept", file=str(self.path), offset=valid_size, bytes=len(cut),
                        keptIn=str(keep))  # fmt: skip
        os.ftruncate(self._fd, valid_size)
        os.fsync(self._fd)
        if PROBE.enabled:
            PROBE.fact("cut", file=str(self.path), size=valid_size, keptIn=str(keep))
            PROBE.fact("fsync", file=str(self.path), size=valid_size)
            PROBE.reach("tail/cut", file=str(self.path), size=valid_size)

    def _new_cut_file(self, valid_size: int) -> tuple[int, Path]:
        # Never overwrite an earlier cut at the same offset: number them.
        for attempt in range(1000):
            suffix = "" if attempt == 0 else f".{attempt}"
            keep = self.directory / f"{LOG_NAME}.cut-{valid_size}{suffix}"
            try:
                return os.open(keep, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644), keep
            except FileExistsError:
                continue
        raise FileExistsError(f"{self.directory}: too many cut files for offset {valid_size}")

    # -- writing -----------------------------------------------------------

    def append_batch(self, events: Sequence[Event]) -> None:
        if not events:
            return
        first = events[0].seq
        if first != self._next_seq:
            raise ValueError(f"batch starts at seq {first}; the log's next seq is {self._next_seq}")
        for previous, event in itertools.pairwise(events):
            if event.seq != previous.seq + 1:
                raise ValueError(f"seq gap inside batch: {previous.seq} then {event.seq}")
        payload = encode_events(events)
        offset = self._written_size
        try:
            self._maybe_fail("write")
            written = os.write(self._fd, payload)
            while written < len(payload):  # regular files rarely write short
                written += os.write(self._fd, payload[written:])
        except OSError:
            self._roll_back()
            raise
        self._written_size = offset + len(payload)
        self._next_seq = events[-1].seq + 1
        if PROBE.enabled:
            PROBE.fact("write", file=str(self.path), offset=offset, bytes=len(payload))
            PROBE.reach("flush/written", file=str(self.path), size=self._written_size)

    def sync(self) -> None:
        try:
            self._maybe_fail("sync")
            os.fsync(self._fd)
        except OSError as exc:
            # After a failed fsync the kernel may have dropped the dirty pages
            # and marked them clean, so fsync again would "succeed" without
            # writing them (PostgreSQL's fsyncgate).  Never retry the fsync:
            # cut the unsynced bytes off; the coordinator still holds their
            # events and writes them again as new pages on its next flush.
            if PROBE.enabled:
                PROBE.fact(
                    "fsync-failed", file=str(self.path), size=self._written_size,
                    error=exc.strerror or str(exc),
                )  # fmt: skip
            self._roll_back()
            raise
        self._synced_size = self._written_size
        self._synced_seq = self._next_seq
        if PROBE.enabled:
            PROBE.fact("fsync", file=str(self.path), size=self._synced_size)

    def _roll_back(self) -> None:
        # Undo every byte not yet fsynced: the coordinator retries the whole
        # batch, so leaving any of it would duplicate seqs.
        os.ftruncate(self._fd, self._synced_size)
        self._written_size = self._synced_size
        self._next_seq = self._synced_seq
        if PROBE.enabled:
            PROBE.fact("truncate", file=str(self.path), size=self._synced_size)

    def arm_failure(self, op: str, errno_: int) -> None:
        self._injected.arm(op, errno_)

    def _maybe_fail(self, op: str) -> None:
        self._injected.maybe_fail(op, self.path)

    # -- reading and closing ----------------------------------------------

    def load(self) -> LoadedLog:
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            raise SessionMissingError(f"{self.path}: no session log") from None
        return read_log(data, str(self.path))

    @staticmethod
    def summarize(directory: Path) -> SessionSummary | None:
        """The session stored in `directory`, if there is one (for listings)."""
        path = directory / LOG_NAME
        if not path.is_file():
            return None
        try:
            loaded = read_log(path.read_bytes(), str(path))
        except (OSError, SessionCorruptError) as exc:
            return SessionSummary(str(directory), str(path), None, None, None, str(exc))
        created = loaded.header.get("createdAt")
        created_at = float(created) if isinstance(created, int | float) else None
        return SessionSummary(
            str(directory), str(path), loaded.session_id, created_at, len(loaded.events), None
        )

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        if self._lock_fd >= 0:
            os.close(self._lock_fd)  # closing the descriptor releases the flock
            self._lock_fd = -1
