# The lab's end of an exec'd child's per-case supervisor (reaper.py, whose
# header documents the protocol): the control pipe the lab writes commands
# to (T: kill the tree and exit; A: kill the agent's group; EOF: the lab is
# gone) and the status pipe it reads the supervisor's report lines from
# ("pid ...", "exit N", "agent-killed", "error ...", "done"), each read
# bounded.  The handle that owns it is tree.py's `ContainedProcess`.
from __future__ import annotations

import contextlib
import os
import select
import threading
import time
from pathlib import Path

from faultlab.lab.process.reaperrelay import MAX_NAMES

__all__ = ["FREEZER", "REAPER", "StatusPipe", "TreeError"]

REAPER = Path(__file__).with_name("reaper.py")
FREEZER = "/sys/fs/cgroup/freezer"  # cgroup v1's freezer hierarchy (this machine's)


class TreeError(Exception):
    """The supervisor failed: it did not answer in time or processes survived."""


class StatusPipe:
    """The lab's two pipes to one supervisor."""

    def __init__(self, control: int, status: int) -> None:
        self._control = control  # the lab's write end: its EOF tells the supervisor the lab is gone
        self._status = status  # the supervisor's reports, read by the lab
        self._buffer = b""
        self._lines: list[str] = []
        self.code: int | None = None  # the agent's status, once reported
        self.done = False  # the supervisor said "done" or its pipe reached EOF
        self.problems: list[str] = []  # the supervisor's "error" lines
        self.names: list[str] = []  # names looked up in the tree's network namespace
        self._pipes_lock = threading.Lock()  # writes vs close
        self._closed = False

    def next_line(self, timeout: float) -> str | None:
        """The next report line within `timeout` (0: only what is there
        already); None at EOF or time-out."""
        deadline = time.monotonic() + timeout
        while not self._lines:
            if self.done:
                return None
            remaining = max(0.0, deadline - time.monotonic())
            readable, _, _ = select.select([self._status], [], [], remaining)
            if not readable:
                return None
            data = os.read(self._status, 4096)
            if not data:
                self.done = True
                continue
            *lines, self._buffer = (self._buffer + data).split(b"\n")
            self._lines.extend(line.decode("utf-8", "replace") for line in lines)
        line = self._lines.pop(0)
        self._take(line)
        return line

    def _take(self, line: str) -> None:
        if line.startswith("exit "):
            self.code = int(line.split()[1])
        elif line.startswith("error "):
            self.problems.append(line[len("error ") :])
        elif line.startswith("dns ") and len(self.names) < MAX_NAMES:
            self.names.append(line[len("dns ") :][:255])
        elif line == "done":
            self.done = True

    def read_until(self, wanted: str, timeout: float) -> bool:
        """Read reports until one is (or starts with) `wanted`; whether it came."""
        deadline = time.monotonic() + timeout
        while (line := self.next_line(max(0.0, deadline - time.monotonic()))) is not None:
            if line == wanted or line.startswith(wanted):
                return True
        return False

    def command(self, byte: bytes) -> None:
        """Send one command byte (nothing once closed or the supervisor is gone)."""
        with self._pipes_lock, contextlib.suppress(BrokenPipeError):  # it already exited
            if not self._closed:
                os.write(self._control, byte)

    def close(self) -> None:
        with self._pipes_lock:
            self._closed = True
            for fd in (self._control, self._status):
                with contextlib.suppress(OSError):
                    os.close(fd)
