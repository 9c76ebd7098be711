# The per-case supervisor's state and its kill (faultlab/lab/process/reaper.py):
# `_Tree` (the agent, its status, the pipes, reaping every orphan, waiting for
# a signal or a command) and the freeze-then-kill of the tree, the end of its
# PID namespace and the supervisor's last steps (`_finish`).  No faultlab
# import beyond its siblings: the supervisor runs as `python -I -S`.
from __future__ import annotations

import os
import select
import time

TYPE_CHECKING = False  # typing is not imported: it costs the supervisor's start time
if TYPE_CHECKING or __package__:  # mypy; imported, or `python -m faultlab.lab.process.reaper`
    import signal

    from faultlab.forking.procscan import _reaped, _send, _stop_groups, _targets
    from faultlab.lab.process.reaperrelay import _Relays
else:  # `python -I -S reaper.py` put this directory on sys.path (reaper.py)
    import _signal as signal  # the C module: signal.py's enums cost ~8 ms a start

    from procscan import _reaped, _send, _stop_groups, _targets
    from reaperrelay import _Relays

__all__ = [
    "_DEATH_SIGNAL",
    "_PR_SET_PDEATHSIG",
    "_STOP_SIGNALS",
    "_Tree",
    "_finish",
    "_libc",
    "_libc_errno",
    "freeze_kill",
]

_PR_SET_PDEATHSIG = 1
_DEATH_SIGNAL = signal.SIGUSR1  # the parent *thread* died: check whether the lab did
_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
_KILL_BOUND = 20.0  # seconds a freeze-kill may take before the supervisor gives up
_LIBC: list[int] = []  # the handle of the process's own symbols, once opened


def _libc(name: str, *args: int) -> int:
    """Call libc's `name` with int arguments, as ctypes.CDLL(None) would,
    through the C module _ctypes: ctypes/__init__.py's own imports (struct,
    types, ...) cost the supervisor ~10 ms a start.  errno is not kept:
    `_libc_errno` says why a call failed."""
    import _ctypes

    if not _LIBC:
        _LIBC.append(_ctypes.dlopen(None, 0))  # type: ignore[arg-type]  # None: ourselves
    return int(_ctypes.call_function(_ctypes.dlsym(_LIBC[0], name), args))


def _libc_errno(name: str, *args: int) -> str:
    """Why the call `name(*args)` fails: it is made again through ctypes,
    which keeps errno (the failure path only, where the start time no
    longer matters)."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if getattr(libc, name)(*args) == 0:
        return "failed once, then succeeded"
    return os.strerror(ctypes.get_errno())


class _Tree:
    """The supervisor's state: the agent, its status, the pipes."""

    def __init__(self, control: int, status: int, lab: int) -> None:
        self.control = control
        self.status = status
        self.lab = lab
        self.agent = 0
        self.code: int | None = None
        self.reported = False
        self.cgroup: str | None = None  # the case's cgroup directory, if any
        self.init = 0  # the PID namespace's init (our child), 0 if none or reaped
        self.init_report = -1  # its reports: "spawned", "error ...", "exit N"
        self.init_buffer = b""
        self.init_go = -1  # our end of its go-ahead pipe (EOF: we are gone)
        self.relays = _Relays()  # the network namespace's way to the lab, if it has one
        self.stop = False  # a signal asked us to kill the tree and exit
        self.death = False  # the parent thread died (PR_SET_PDEATHSIG)
        self.wake_r, wake_w = os.pipe()
        os.set_blocking(self.wake_r, False)
        os.set_blocking(wake_w, False)
        signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.signal(_DEATH_SIGNAL, self._on_death)
        for signum in _STOP_SIGNALS:
            signal.signal(signum, self._on_stop)

    def _on_death(self, *_: object) -> None:
        self.death = True

    def _on_stop(self, *_: object) -> None:
        self.stop = True

    def say(self, line: str) -> None:
        try:  # noqa: SIM105
            os.write(self.status, line.encode() + b"\n")
        except OSError:  # the lab may be gone: we still clean up
            pass

    def reap(self) -> None:
        """Reap every exited child (orphans re-parent to us); note the agent's status."""
        for pid, status in _reaped():
            if pid == self.init:
                self.init = 0  # the namespace is gone, and all of the tree with it
                self.read_init()
                if self.code is None:
                    self.code = -int(signal.SIGKILL)
            elif pid == self.agent:
                self.code = status
        self.read_init()
        if self.code is not None and not self.reported:
            self.reported = True
            self.say(f"exit {self.code}")

    def read_init(self) -> None:
        """Take the namespace init's "exit N" report of the agent, if one came."""
        if self.init_report < 0:
            return
        try:
            while data := os.read(self.init_report, 512):
                self.init_buffer += data
        except BlockingIOError:
            pass
        *lines, self.init_buffer = self.init_buffer.split(b"\n")
        for line in lines:
            if line.startswith(b"exit ") and self.code is None:
                self.code = int(line.split()[1])

    def lab_gone(self) -> bool:
        return os.getppid() != self.lab

    def pause(self, timeout: float) -> bool:
        """Wait up to `timeout` for a signal or a command; True if a command is readable."""
        watched = [self.control, self.wake_r] + ([self.init_report] if self.init else [])
        readable, writable, _ = select.select(
            watched + self.relays.readers(), self.relays.writers(), [], timeout
        )
        self.relays.serve(readable, writable)
        try:
            while os.read(self.wake_r, 512):
                pass
        except BlockingIOError:
            pass
        return self.control in readable


def freeze_kill(tree: _Tree, group: int | None, *, scan: bool = False) -> bool:
    """SIGSTOP every live descendant (of process group `group`, or all; the
    case's cgroup members, or with `scan` or no cgroup every process under us
    in /proc), rescan
    until no new one appears, SIGKILL them all, reap; repeat until none is left.
    A stopped process cannot fork, so a fork race cannot outrun the kill.
    Returns False if some were still left after `_KILL_BOUND` seconds."""
    cgroup = None if scan else tree.cgroup
    deadline = time.monotonic() + _KILL_BOUND
    while True:
        if group is None and cgroup is None and not _has_children(tree):
            # A subreaper with no child, live or zombie, has no descendant at
            # all (an orphan re-parents to us before its parent is a zombie):
            # the scan of all of /proc can be skipped (the usual end once a
            # PID namespace's init is killed).
            return True
        tree.reap()
        live, groups = _targets(cgroup, group)
        if not live:
            return True
        if time.monotonic() > deadline:
            return False
        stopped: dict[int, int] = {}
        while new := {pid: start for pid, start in live.items() if pid not in stopped}:
            _stop_groups(groups, group)
            for pid, start in new.items():
                _send(pid, start, signal.SIGSTOP)
            stopped.update(new)
            live, groups = _targets(cgroup, group)
        for pid, start in stopped.items():
            _send(pid, start, signal.SIGKILL)
        tree.pause(0.005)


def _end_namespace(tree: _Tree) -> None:
    """SIGKILL the namespace's init: the kernel then kills every process of the
    namespace before init's own exit can be reaped, so no fork can outrun it."""
    if not tree.init:
        return
    try:
        os.kill(tree.init, signal.SIGKILL)  # our unreaped child: its pid is not reused
        os.waitpid(tree.init, 0)
    except ChildProcessError:
        pass
    tree.init = 0
    tree.read_init()
    if tree.code is None:
        tree.code = -int(signal.SIGKILL)


def _finish(tree: _Tree) -> int:
    _end_namespace(tree)
    # The cgroup's members first (fast).  Anything that left the cgroup (only
    # root can) re-parented to us once its cgroup ancestors died: so a scan
    # of all of /proc is needed only while we still have a live child.
    killed = freeze_kill(tree, None)
    if killed and tree.cgroup is not None and _has_children(tree):
        killed = freeze_kill(tree, None, scan=True)
    if not killed:
        tree.say("error some processes survived the kill")
    tree.reap()
    if tree.cgroup is not None:
        try:  # noqa: SIM105
            os.rmdir(tree.cgroup)
        except OSError:  # a member not yet torn down: an empty directory stays
            pass
    tree.say("done")
    return 0


def _has_children(tree: _Tree) -> bool:
    """Whether any child is left, live or not yet reaped (ECHILD: none)."""
    tree.reap()
    try:
        os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return False
    return True
