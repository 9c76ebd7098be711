"""Test target: the reference runtime with its session log written in the
file I/O shape of another language's runtime, all of them correct.

`python io_shapes.py SHAPE SCENARIO --session-dir DIR ...`, SHAPE one of:

- `node`: Node's `fs.writeSync(fd, text, 0)` on an `'a'` descriptor: each
  append is a `pwrite64` at offset 0 on an O_APPEND fd (Linux appends it);
- `threads`: Go's runtime and libuv's pool: every write, fsync and
  ftruncate of the log made from a different OS thread;
- `vectored`: `writev` of each batch in two pieces, `fdatasync` for fsync;
- `dsync`: the log opened with O_DSYNC, so each write is durable when it
  returns and the log's own fsyncs after a write are left out (a truncate
  is still fsynced: O_DSYNC does not cover it);
- `dup`: the log written and fsynced through descriptors duplicated from
  the one it was opened with (Java's FileChannel over a shared descriptor);
- `pwrite`: the log opened without O_APPEND and written with `os.pwrite` at
  the end the writer keeps itself (a positioned `FileChannel.write`);

and one broken shape, which the oracle must catch:

- `node-nofsync`: `node`, with the log's fsyncs left out while the runtime
  still reports them (a runtime that trusts `fs.writeSync` to be durable).

Only `faultlab/runtime/backends/jsonl.py` sees the shaped `os`; the probe's
own pipe writes are untouched.  Run like `python -m faultlab.runtime`, the
shape first.
"""

from __future__ import annotations

import fcntl
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[3]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from faultlab.runtime.backends import jsonl  # noqa: E402

SHAPES = ("node", "threads", "vectored", "dsync", "dup", "pwrite", "node-nofsync")


def _appending(fd: int) -> bool:
    return bool(fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_APPEND)


def _on_a_thread(call: Callable[..., Any], *args: Any) -> Any:
    box: list[Any] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            box.append(call(*args))
        except BaseException as exc:
            errors.append(exc)

    worker = threading.Thread(target=run)
    worker.start()
    worker.join()
    if errors:
        raise errors[0]
    return box[0]


class ShapedOs:
    """`os` for the JSONL backend, in one shape; the rest is the real `os`."""

    def __init__(self, shape: str) -> None:
        self.shape = shape
        self._after_write: set[int] = set()  # dsync: fds whose last change was a write
        self._dups: dict[int, int] = {}
        self._ends: dict[int, int] = {}  # pwrite: fd -> where the next write goes

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)

    def open(self, path: Any, flags: int, mode: int = 0o777) -> int:
        if self.shape == "dsync" and flags & os.O_APPEND:
            flags |= os.O_DSYNC
        if self.shape == "pwrite" and flags & os.O_APPEND:
            fd = os.open(path, flags & ~os.O_APPEND, mode)
            self._ends[fd] = os.fstat(fd).st_size
            return fd
        return os.open(path, flags, mode)

    def _via(self, fd: int) -> int:
        if self.shape != "dup":
            return fd
        if fd not in self._dups:
            self._dups[fd] = os.dup(fd)
        return self._dups[fd]

    def write(self, fd: int, data: bytes) -> int:
        self._after_write.add(fd)
        if self.shape.startswith("node") and _appending(fd):
            return os.pwrite(fd, data, 0)
        if self.shape == "threads":
            return int(_on_a_thread(os.write, fd, data))
        if fd in self._ends:
            written = os.pwrite(fd, data, self._ends[fd])
            self._ends[fd] += written
            return written
        if self.shape == "vectored" and len(data) > 1:
            half = len(data) // 2
            return os.writev(fd, [data[:half], data[half:]])
        return os.write(self._via(fd), data)

    def fsync(self, fd: int) -> None:
        if self.shape == "dsync" and fd in self._after_write and _appending(fd):
            return  # every write through it was durable when it returned
        if self.shape == "node-nofsync" and _appending(fd):
            return  # the bug: the log's bytes are never made durable
        if self.shape == "threads":
            _on_a_thread(os.fsync, fd)
        elif self.shape == "vectored":
            os.fdatasync(fd)
        else:
            os.fsync(self._via(fd))

    def ftruncate(self, fd: int, size: int) -> None:
        self._after_write.discard(fd)
        if fd in self._ends:
            self._ends[fd] = size
        if self.shape == "threads":
            _on_a_thread(os.ftruncate, fd, size)
        else:
            os.ftruncate(self._via(fd), size)

    def close(self, fd: int) -> None:
        self._after_write.discard(fd)
        self._ends.pop(fd, None)
        dup = self._dups.pop(fd, None)
        if dup is not None:
            os.close(dup)
        os.close(fd)


if __name__ == "__main__":
    shape = sys.argv.pop(1)
    if shape not in SHAPES:
        sys.exit(f"io_shapes.py: unknown shape {shape!r} (one of {', '.join(SHAPES)})")
    jsonl.os = ShapedOs(shape)  # type: ignore[assignment]

    from faultlab.runtime.__main__ import main

    sys.exit(main())
