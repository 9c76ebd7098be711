# The small parts of a child's process handling that are not the process
# handle itself (tree.py): how a child ended (`ChildExit`, `ChildHung`), a
# signal to its process group, the sweep that kills and names what is left
# of a group, and a wrapper's (strace's) target.
from __future__ import annotations

import contextlib
import os
import signal
from dataclasses import dataclass

import psutil

__all__ = ["ChildExit", "ChildHung", "signal_group", "sweep_group", "wrapped_target"]


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
