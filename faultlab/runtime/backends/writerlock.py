# What every backend does the same way around its storage: the writer lock
# (an flock on a lock file beside the session, naming the holder's pid, so a
# second writer is refused with the same message whatever the backend) and
# the injected failures the probe's `fail-next-flush` arms, and which of
# "resume it" / "create it" / refuse an open asks for.
from __future__ import annotations

import fcntl
import os
from pathlib import Path

from faultlab.runtime.backends.base import (
    SessionExistsError,
    SessionLockedError,
    SessionMissingError,
)

__all__ = ["InjectedFailures", "resumes_existing", "take_writer_lock"]


def take_writer_lock(lock_path: Path, session_path: Path) -> int:
    """Lock `lock_path` for this process and write our pid in it; return the fd
    (closing it releases the lock).  Raises SessionLockedError naming the
    holder when another live process has it."""
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
        os.close(fd)
        raise SessionLockedError(
            f"{session_path}: session is locked by another live writer (pid {holder}); "
            "refusing to open a second writer"
        ) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd


class InjectedFailures:
    """Failures armed for the next `write` or `sync` of a backend."""

    def __init__(self) -> None:
        self._armed: dict[str, int] = {}

    def arm(self, op: str, errno_: int) -> None:
        if op not in ("write", "sync"):
            raise ValueError(f"op must be 'write' or 'sync', not {op!r}")
        self._armed[op] = errno_

    def maybe_fail(self, op: str, path: Path) -> None:
        """Raise the OSError armed for `op`, once."""
        code = self._armed.pop(op, None)
        if code is not None:
            raise OSError(code, f"{os.strerror(code)} (injected)", str(path))


def resumes_existing(path: Path, *, create: bool, resume: bool, missing: str) -> bool:
    """True: the session at `path` exists and is to be resumed; False: it is
    missing and to be created.  Raises SessionExistsError (a new session over
    an existing one) or SessionMissingError (`missing` names what is absent)."""
    if path.exists():
        if not resume:
            raise SessionExistsError(
                f"{path}: a session already exists here (resume it, or use a new session directory)"
            )
        return True
    if not create:
        raise SessionMissingError(f"{path}: no {missing}")
    return False
