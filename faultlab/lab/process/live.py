# Every child the lab started and has not reaped yet (`_LIVE`, which
# faultlab/lab/process/spawn.py's `Child` joins on start and leaves once
# settled): killed all at once on interrupt of the lab (`kill_all`), and no
# new one may start while an interrupted run stops (`stop_children` until
# `allow_children`).
from __future__ import annotations

import threading
from typing import Protocol

__all__ = ["allow_children", "kill_all", "stop_children"]


class _Killable(Protocol):
    def kill(self) -> None: ...


_LIVE: set[_Killable] = set()  # children started and not reaped yet
_STOPPING = threading.Event()  # set by stop_children: no new child may start


def kill_all() -> None:
    """SIGKILL every live child's process group (on interrupt of the lab)."""
    for child in list(_LIVE):
        child.kill()


def stop_children() -> None:
    """An interrupted run's first step: from now on until `allow_children`,
    starting a child raises ChildHung; then every live child is killed."""
    _STOPPING.set()
    kill_all()


def allow_children() -> None:
    """Children may start again (the interrupted run's workers are done)."""
    _STOPPING.clear()
