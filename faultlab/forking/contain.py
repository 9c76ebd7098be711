# How a fork server contains the children it forks, so that nothing a child
# starts (a setsid daemon, a double fork, a helper in a group of its own)
# outlives it.  Where the kernel allows it (root, here and in CI), each child
# is forked as the init of a PID namespace of its own: whatever it starts is
# in that namespace, re-parents to it, and is killed by the kernel when the
# child dies, before its exit can be reaped, so no fork race can outrun the
# kill.  Elsewhere (or with FAULTLAB_PIDNS=0) the server and each child are
# child subreapers: what a child starts stays its descendant while it lives
# and re-parents to the server when it dies; the server then freezes and
# kills it (`Nursery.clean_up`) before it reports the child's exit.
# A per-child supervisor process, as an exec'd child has, would cost a fork
# of the server per child (about 3 ms of CPU each here); a namespace costs
# nothing measurable (docs/decisions.md, "Issue 29: one process handle").
# Stdlib only, beside the /proc scans it shares with the lab's supervisor.
from __future__ import annotations

import ctypes
import os
import signal
import time
from collections.abc import Collection

from faultlab.forking.procscan import _descendants, _send, _stop_groups

__all__ = ["Nursery"]

_CLONE_NEWPID = 0x20000000
_PR_SET_CHILD_SUBREAPER = 36
_KILL_BOUND = 20.0  # seconds a clean-up may take before it gives up
_LAST_PID = "/proc/sys/kernel/ns_last_pid"


class Nursery:
    """The server's way to fork a contained child (`fork`) and to kill what
    a child left once it exited (`clean_up`)."""

    def __init__(self, *, pidns: bool) -> None:
        """`pidns`: try a PID namespace per child (falls back to subreapers
        when the kernel refuses)."""
        self._libc = ctypes.CDLL(None, use_errno=True)
        self._own = -1  # the server's PID namespace, to come back to after each fork
        self._namespaced = False  # forking children into namespaces of their own
        self._stuck = ""  # why forking must stop: the server could not come back to it
        if pidns:
            try:
                self._own = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
            except OSError:
                self._own = -1
        self._namespaced = self._own >= 0
        # A subreaper either way: in a namespace nothing comes here, but a
        # flat child's leftovers must.
        self._libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)

    @property
    def namespaced(self) -> bool:
        """Whether children are forked into PID namespaces of their own."""
        return self._namespaced

    @property
    def fds(self) -> set[int]:
        """The server's fds a forked child must close (kept open for the
        server's life, so that the number never names another file)."""
        return {self._own} if self._own >= 0 else set()

    def fork(self) -> int:
        """`os.fork()`, the child contained: 0 in the child, its pid here."""
        if self._stuck:
            raise OSError(self._stuck)
        namespaced = self._namespaced and self._libc.unshare(_CLONE_NEWPID) == 0
        if self._namespaced and not namespaced:
            self._namespaced = False  # not allowed here: subreapers from now on
        try:
            pid = os.fork()
        except BaseException:
            if namespaced:
                self._back()
            raise
        if pid == 0:
            if not namespaced:
                self._libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
            return 0
        if namespaced:
            self._back()
        return pid

    def _back(self) -> None:
        """Fork the next children into the server's own namespace again."""
        if self._libc.setns(self._own, _CLONE_NEWPID) != 0:
            # Another fork would put its child into the last child's
            # namespace: stop forking rather than that.
            self._stuck = ("cannot return to the server's PID namespace: "
                           f"{os.strerror(ctypes.get_errno())}")  # fmt: skip
            raise OSError(self._stuck)

    def clean_up(self, known: Collection[int], floor: int) -> None:
        """After a child exited (flat mode only: in a namespace the kernel
        did it already): freeze and kill every descendant of the server but
        the children in `known` and theirs, and reap them.  What a child
        left has a pid above the child's (`floor`), unless pids wrapped."""
        if self._namespaced:
            return
        if _last_pid() < floor:
            floor = 0  # pids wrapped around since: look at them all
        skip = frozenset(known)
        deadline = time.monotonic() + _KILL_BOUND
        me = os.getpid()
        while time.monotonic() < deadline:
            live = _live(_descendants(me, floor, skip))
            if not live:
                return
            stopped: dict[int, int] = {}
            # A stopped process cannot fork: stop until no new one appears.
            while new := {pid: start for pid, (start, _g) in live.items() if pid not in stopped}:
                _stop_groups({group for _start, group in live.values()}, None)
                for pid, start in new.items():
                    _send(pid, start, signal.SIGSTOP)
                stopped.update(new)
                live = _live(_descendants(me, floor, skip))
            for pid, start in stopped.items():
                _send(pid, start, signal.SIGKILL)
            # The server's own loop reaps them (reporting only its children
            # the lab was given); a dead one shows as a zombie until then.
            time.sleep(0.001)


def _live(found: dict[int, tuple[int, int, str, int]]) -> dict[int, tuple[int, int]]:
    """pid -> (start time, process group) of the processes not yet dead."""
    return {pid: (start, pgid) for pid, (_ppid, pgid, state, start) in found.items()
            if state != "Z"}  # fmt: skip


def _last_pid() -> int:
    try:
        with open(_LAST_PID, "rb") as handle:
            return int(handle.read())
    except (OSError, ValueError):
        return 0
