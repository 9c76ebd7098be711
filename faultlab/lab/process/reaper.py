# The per-case supervisor of a black-box agent (Linux only): it makes itself a
# child subreaper, spawns the agent in a session of its own and reaps every
# process of the tree, so no descendant can escape it by re-parenting, whatever
# group or session it moves to.  It kills the tree (freeze, then kill) when the
# lab asks, when the lab's control pipe reaches EOF, or when the lab dies.
# Lean on purpose: the lab runs it as `python -I -S reaper.py` (stdlib only, no
# faultlab import), once per case; `python -m faultlab.lab.process.reaper` works
# too.  Protocol (faultlab/lab/process/tree.py is the other side):
#   argv:    CONTROL_FD STATUS_FD LAB_PID -- AGENT_ARGV...
#   control: one byte per command: T (kill the tree, then exit), A (kill the
#            agent's process group only); EOF: the lab is gone, kill the tree.
#   status:  lines "pid N", "exit N" (the agent's status, -SIG if killed),
#            "agent-killed", "error MESSAGE", "done" (then the supervisor exits).
from __future__ import annotations

import contextlib
import ctypes
import os
import select
import signal
import sys
import time

__all__ = ["main"]

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
_DEATH_SIGNAL = signal.SIGUSR1  # the parent *thread* died: check whether the lab did
_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
_KILL_BOUND = 20.0  # seconds a freeze-kill may take before the supervisor gives up
_TICK = 0.5  # seconds between checks that the lab is still our parent


class _Tree:
    """The supervisor's state: the agent, its status, the pipes."""

    def __init__(self, control: int, status: int, lab: int) -> None:
        self.control = control
        self.status = status
        self.lab = lab
        self.agent = 0
        self.code: int | None = None
        self.reported = False
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
        with contextlib.suppress(OSError):  # the lab may be gone: we still clean up
            os.write(self.status, line.encode() + b"\n")

    def reap(self) -> None:
        """Reap every exited child (orphans re-parent to us); note the agent's status."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            if pid == self.agent:
                self.code = os.waitstatus_to_exitcode(status)
        if self.code is not None and not self.reported:
            self.reported = True
            self.say(f"exit {self.code}")

    def lab_gone(self) -> bool:
        return os.getppid() != self.lab

    def pause(self, timeout: float) -> bool:
        """Wait up to `timeout` for a signal or a command; True if a command is readable."""
        readable, _, _ = select.select([self.control, self.wake_r], [], [], timeout)
        with contextlib.suppress(BlockingIOError):
            while os.read(self.wake_r, 512):
                pass
        return self.control in readable


def _processes() -> dict[int, tuple[int, int, str, int]]:
    """Every process: pid -> (ppid, pgid, state, start time), from /proc."""
    found: dict[int, tuple[int, int, str, int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        stat = _stat(int(name))
        if stat is not None:
            found[int(name)] = stat
    return found


def _stat(pid: int) -> tuple[int, int, str, int] | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    # The command name is in parentheses and may hold anything: split after it.
    fields = data[data.rfind(b")") + 2 :].split()
    return int(fields[1]), int(fields[2]), fields[0].decode(), int(fields[19])


def _descendants(root: int) -> dict[int, tuple[int, int, str, int]]:
    table = _processes()
    children: dict[int, list[int]] = {}
    for pid, (ppid, *_rest) in table.items():
        children.setdefault(ppid, []).append(pid)
    found: dict[int, tuple[int, int, str, int]] = {}
    todo = list(children.get(root, ()))
    while todo:
        pid = todo.pop()
        found[pid] = table[pid]
        todo.extend(children.get(pid, ()))
    return found


def _send(pid: int, start: int, signum: int) -> None:
    """Signal `pid` only if it is still the process the scan saw (its start time):
    a pidfd opened first pins the process, so a reused pid is never signalled."""
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    except OSError:  # no pidfds (old kernel): a start-time check, then kill
        stat = _stat(pid)
        if stat is not None and stat[3] == start:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signum)
        return
    try:
        stat = _stat(pid)
        if stat is not None and stat[3] == start:
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(pidfd, signum)
    finally:
        os.close(pidfd)


def freeze_kill(tree: _Tree, group: int | None) -> bool:
    """SIGSTOP every live descendant (of process group `group`, or all), rescan
    until no new one appears, SIGKILL them all, reap; repeat until none is left.
    A stopped process cannot fork, so a fork race cannot outrun the kill.
    Returns False if some were still left after `_KILL_BOUND` seconds."""
    me = os.getpid()
    deadline = time.monotonic() + _KILL_BOUND
    while True:
        tree.reap()
        live = _targets(me, group)
        if not live:
            return True
        if time.monotonic() > deadline:
            return False
        stopped: dict[int, int] = {}
        while new := {pid: start for pid, start in live.items() if pid not in stopped}:
            for pid, start in new.items():
                _send(pid, start, signal.SIGSTOP)
            stopped.update(new)
            live = _targets(me, group)
        for pid, start in stopped.items():
            _send(pid, start, signal.SIGKILL)
        tree.pause(0.005)


def _targets(me: int, group: int | None) -> dict[int, int]:
    return {
        pid: start
        for pid, (_ppid, pgid, state, start) in _descendants(me).items()
        if state != "Z" and (group is None or pgid == group)
    }


def _finish(tree: _Tree) -> int:
    if not freeze_kill(tree, None):
        tree.say("error some processes survived the kill")
    tree.reap()
    tree.say("done")
    return 0


def _spawn(tree: _Tree, argv: list[str]) -> bool:
    # Signals ignored here (Python ignores SIGPIPE and SIGXFSZ) would stay
    # ignored across exec: the agent gets every disposition at its default.
    defaults = {signal.Signals(n) for n in range(1, 32)} - {signal.SIGKILL, signal.SIGSTOP}
    try:
        tree.agent = os.posix_spawnp(
            argv[0], argv, os.environ, setsid=True, setsigdef=defaults, setsigmask=()
        )
    except OSError as error:
        tree.say(f"error cannot start {argv[0]!r}: {error.strerror or error}")
        return False
    tree.say(f"pid {tree.agent}")
    return True


def _setup() -> bool:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        return False
    return bool(libc.prctl(_PR_SET_PDEATHSIG, int(_DEATH_SIGNAL), 0, 0, 0) == 0)


def main(args: list[str]) -> int:
    if len(args) < 5 or args[3] != "--":
        print("usage: reaper CONTROL_FD STATUS_FD LAB_PID -- ARGV...", file=sys.stderr)
        return 2
    control, status, lab = int(args[0]), int(args[1]), int(args[2])
    for fd in (control, status):
        os.set_inheritable(fd, False)  # the agent must never hold the lab's pipes
    tree = _Tree(control, status, lab)
    if not _setup():
        tree.say(f"error prctl failed: {os.strerror(ctypes.get_errno())}")
        return 1
    # The lab may have died before PR_SET_PDEATHSIG was set: then no signal comes.
    if tree.lab_gone() or not _spawn(tree, args[4:]):
        return _finish(tree)
    while True:
        command = tree.pause(_TICK)
        tree.reap()
        if tree.stop or ((tree.death or not command) and tree.lab_gone()):
            return _finish(tree)
        tree.death = False
        if not command:
            continue
        data = os.read(control, 64)
        if not data or b"T" in data:  # EOF: every lab-side writer is gone
            return _finish(tree)
        if b"A" in data:
            freeze_kill(tree, tree.agent)
            tree.reap()
            tree.say("agent-killed")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
