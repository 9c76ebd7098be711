# The view of processes that containment needs, read from /proc: every
# process or a tree's descendants, the members of a case's freezer cgroup and
# the moves into and out of it, and signals sent so that a reused pid is
# never hit (a pidfd, or the start time the scan saw).  Shared by the
# per-case supervisor of an exec'd child (faultlab/lab/process/reaper.py) and
# the fork servers' containment of their children (contain.py beside it).
# Stdlib only, no faultlab import: the supervisor runs it as `python -I -S`
# with this directory on sys.path.
from __future__ import annotations

import os

TYPE_CHECKING = False  # typing is not imported: it costs the supervisor's start time
if TYPE_CHECKING or __package__:  # mypy; imported as faultlab.forking.procscan
    import signal
else:  # the supervisor's `python -I -S`: the C module, without signal.py's enums
    import _signal as signal

__all__ = [
    "_descendants",
    "_join_cgroup",
    "_members",
    "_move",
    "_own_freezer",
    "_processes",
    "_reaped",
    "_send",
    "_stat",
    "_stop_groups",
    "_targets",
]

_FREEZER = "/sys/fs/cgroup/freezer"


def _processes(floor: int = 0) -> dict[int, tuple[int, int, str, int]]:
    """Every process (with a pid above `floor`): pid -> (ppid, pgid, state,
    start time), from /proc."""
    found: dict[int, tuple[int, int, str, int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) <= floor:
            continue
        stat = _stat(int(name))
        if stat is not None:
            found[int(name)] = stat
    return found


def _reaped() -> list[tuple[int, int]]:
    """Reap every child that has exited, without waiting: (pid, status) of
    each, the status an exit code or minus the signal that killed it."""
    found: list[tuple[int, int]] = []
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return found
        if pid == 0:
            return found
        found.append((pid, os.waitstatus_to_exitcode(status)))


def _stat(pid: int) -> tuple[int, int, str, int] | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    # The command name is in parentheses and may hold anything: split after it.
    fields = data[data.rfind(b")") + 2 :].split()
    return int(fields[1]), int(fields[2]), fields[0].decode(), int(fields[19])


def _descendants(
    root: int, floor: int = 0, skip: frozenset[int] = frozenset()
) -> dict[int, tuple[int, int, str, int]]:
    """The descendants of `root` (with pids above `floor`), leaving out the
    children of `root` in `skip` and theirs."""
    table = _processes(floor)
    children: dict[int, list[int]] = {}
    for pid, (ppid, *_rest) in table.items():
        children.setdefault(ppid, []).append(pid)
    found: dict[int, tuple[int, int, str, int]] = {}
    todo = [pid for pid in children.get(root, ()) if pid not in skip]
    while todo:
        pid = todo.pop()
        found[pid] = table[pid]
        todo.extend(children.get(pid, ()))
    return found


def _members(cgroup: str) -> dict[int, tuple[int, int, str, int]]:
    try:
        with open(f"{cgroup}/cgroup.procs", "rb") as handle:
            pids = [int(pid) for pid in handle.read().split()]
    except OSError:
        return {}
    found = {}
    for pid in pids:
        stat = _stat(pid)
        if stat is not None:
            found[pid] = stat
    return found


def _own_freezer() -> str | None:
    """The directory of the freezer cgroup we are in, None if there is none."""
    try:
        with open("/proc/self/cgroup") as handle:
            lines = [line.rstrip("\n").split(":", 2) for line in handle]
    except OSError:
        return None
    for fields in lines:
        if len(fields) == 3 and "freezer" in fields[1].split(","):
            return _FREEZER + fields[2].rstrip("/")
    return None


def _join_cgroup(home: str) -> str | None:
    """Make a freezer cgroup for the case under `home` and move into it, so the
    agent is born inside; the caller moves back out after the spawn.  None
    (and nothing changed) if cgroups cannot be written here."""
    path = f"{home}/faultlab-case-{os.getpid()}"
    try:
        os.mkdir(path)
    except OSError:
        return None
    try:
        _move(path)
    except OSError:
        os.rmdir(path)
        return None
    return path


def _move(cgroup: str) -> None:
    with open(f"{cgroup}/cgroup.procs", "w") as handle:
        handle.write(str(os.getpid()))


def _send(pid: int, start: int, signum: int) -> None:
    """Signal `pid` only if it is still the process the scan saw (its start time):
    a pidfd opened first pins the process, so a reused pid is never signalled."""
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    except OSError:  # no pidfds (old kernel): a start-time check, then kill
        pidfd = -1
    try:
        stat = _stat(pid)
        if stat is not None and stat[3] == start:
            if pidfd >= 0:
                signal.pidfd_send_signal(pidfd, signum)
            else:
                os.kill(pid, signum)
    except ProcessLookupError:
        pass
    finally:
        if pidfd >= 0:
            os.close(pidfd)


def _stop_groups(groups: set[int], group: int | None) -> None:
    """SIGSTOP every process group the tree's live members were seen in, at
    once: the kernel delivers a group signal to every member and a fork in
    flight restarts after it, so a fork chain inside a group cannot outrun
    it, as it can outrun one signal per scanned pid (a /proc scan takes
    100 ms and more under load, a chain link lives 2 ms).  Never our own
    group."""
    own = os.getpgrp()
    for pgid in groups:
        if pgid == own or pgid <= 1 or (group is not None and pgid != group):
            continue
        try:  # noqa: SIM105
            os.killpg(pgid, signal.SIGSTOP)
        except OSError:  # the group is gone: nothing to stop
            pass


def _targets(cgroup: str | None, group: int | None) -> tuple[dict[int, int], set[int]]:
    """The live members (pid -> start time) and the process groups they are in."""
    found = _members(cgroup) if cgroup else _descendants(os.getpid())
    live = {
        pid: (start, pgid)
        for pid, (_ppid, pgid, state, start) in found.items()
        if state != "Z" and (group is None or pgid == group)
    }
    return {pid: start for pid, (start, _) in live.items()}, {pgid for _, pgid in live.values()}
