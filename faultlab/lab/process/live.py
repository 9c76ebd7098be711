# Every process the lab started and has not closed yet, whichever drive
# started it: one registry of `ContainedProcess` handles (tree.py), which
# join it when they start and leave it when they are closed.  On interrupt
# of the lab every live one is stopped at once (`kill_all`: its whole tree
# killed), and no new one may start while an interrupted run stops
# (`stop_children` until `allow_children`).
from __future__ import annotations

import threading
from typing import Protocol

__all__ = ["allow_children", "join", "kill_all", "leave", "live", "stop_children", "stopping"]


class _Stoppable(Protocol):
    def stop(self) -> None: ...


_LIVE: set[_Stoppable] = set()  # started and not closed yet
_LOCK = threading.Lock()  # case threads join and leave while an interrupt walks the set
_STOPPING = threading.Event()  # set by stop_children: no new process may start


def join(process: _Stoppable) -> None:
    with _LOCK:
        _LIVE.add(process)


def leave(process: _Stoppable) -> None:
    with _LOCK:
        _LIVE.discard(process)


def live() -> list[_Stoppable]:
    """The processes started and not closed yet."""
    with _LOCK:
        return list(_LIVE)


def stopping() -> bool:
    """Whether an interrupted run is stopping (no process may start)."""
    return _STOPPING.is_set()


def kill_all() -> None:
    """Kill every live process with its whole tree (on interrupt of the lab,
    or a broken run), whichever drive started it.  Safe from any thread: it
    only kills and waits (bounded); each process's owner still closes it."""
    for process in live():
        process.stop()


def stop_children() -> None:
    """An interrupted run's first step: from now on until `allow_children`,
    starting a process raises ChildHung; then every live one is killed."""
    _STOPPING.set()
    kill_all()


def allow_children() -> None:
    """Processes may start again (the interrupted run's workers are done)."""
    _STOPPING.clear()
