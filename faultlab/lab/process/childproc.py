# The small parts of a child's process handling that are not the child's
# life itself: how it ended (`ChildExit`, `ChildHung`), a signal to its
# process group, a `ContainedProcess` seen as the parts of Popen a child uses,
# and the sweeps that kill and name what a child left behind (its group's
# stragglers, or the rest of its contained tree).  The child is
# faultlab/lab/process/spawn.py.
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from dataclasses import dataclass

import psutil

from faultlab.lab.process.tree import ContainedProcess, TreeError

__all__ = [
    "ChildExit",
    "ChildHung",
    "Contained",
    "kill_left",
    "signal_group",
    "sweep_group",
    "sweep_tree",
    "wrapped_target",
]


class Contained:
    """A `ContainedProcess` as the parts of Popen a Child uses."""

    def __init__(self, tree: ContainedProcess) -> None:
        self.tree = tree
        self.pid = tree.pid

    @property
    def returncode(self) -> int | None:
        return self.tree.returncode

    def poll(self) -> int | None:
        return self.tree.wait(0.001)

    def wait(self, timeout: float | None = None) -> int:
        code = self.tree.wait(60.0 if timeout is None else timeout)
        if code is None:
            raise subprocess.TimeoutExpired(f"child {self.pid}", timeout or 0)
        return code


class ChildHung(Exception):
    """The child did not reach its boundary or exit within its budget."""


@dataclass(frozen=True, slots=True)
class ChildExit:
    """How a child ended: its status (negative: killed by that signal)."""

    returncode: int
    stderr: str


def signal_group(pid: int, signum: int) -> None:
    """Send `signum` to the process group `pid` leads."""
    try:
        os.killpg(pid, signum)
    except ProcessLookupError:
        # A forked child may not have made its group yet (setsid runs right
        # after the fork): signal the process itself.
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)


def sweep_group(pgid: int, stragglers: list[str]) -> None:
    """Kill what is left of a forked child's process group `pgid`, naming it
    in `stragglers`.  A forked child's grandchildren re-parented to init are
    invisible as children, but they keep our process group id.  killpg(pgid, 0)
    asks whether any member is left; psutil names them for the report."""
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return
    for proc in psutil.process_iter(["pid", "name"]):
        with contextlib.suppress(psutil.Error, OSError):
            if os.getpgid(proc.info["pid"]) == pgid:
                stragglers.append(f"{proc.info['name']}[{proc.info['pid']}]")
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)


def sweep_tree(tree: ContainedProcess, stragglers: list[str]) -> None:
    """Kill what is left of an exec'd child's tree (daemons in sessions
    and groups of their own included), naming it for the report."""
    for proc in tree.descendants():
        with contextlib.suppress(psutil.Error):
            stragglers.append(f"{proc.name()}[{proc.pid}]")
    try:
        tree.kill_tree()
    except TreeError as exc:
        stragglers.append(f"(the supervisor failed: {exc})")
    finally:
        tree.close()


def wrapped_target(wrapper_pid: int) -> int:
    """A pidfd of a wrapper's (strace's) one child, the target; -1 while it
    cannot be found."""
    with contextlib.suppress(psutil.Error, OSError):
        wrapper = psutil.Process(wrapper_pid)
        # The target is the child that exec'd: strace also forks
        # short-lived copies of itself (its seccomp check).
        own = wrapper.cmdline()
        found = [c for c in wrapper.children() if c.cmdline() != own]
        if found:
            return os.pidfd_open(found[0].pid)
    return -1


def kill_left(tree: ContainedProcess, pid: int, stragglers: list[str]) -> bool:
    """Kill every process of `tree` but `pid`, naming each in `stragglers`;
    True if there was one."""
    left = [p for p in tree.descendants() if p.pid != pid]
    for proc in left:
        with contextlib.suppress(psutil.Error):
            stragglers.append(f"{proc.name()}[{proc.pid}]")
            proc.kill()
    return bool(left)
