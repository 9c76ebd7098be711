# Where the lab's case directories live.  A SIGKILL leaves the page cache
# intact, so what a killed child wrote is there for its successor whether or
# not the medium under it is a disk: the children's fsyncs are real system
# calls either way, and power loss is judged from their write/fsync facts
# (faultlab/lab/faults/powerloss.py), never from the medium.  A RAM-backed directory
# therefore changes no verdict and removes a disk flush from every checkpoint
# of every child (about a quarter of a fork-mode case's time here).  An
# explicit choice always wins: FAULTLAB_SCRATCH, then TMPDIR.
# A run's directory records its owner (pid and start time, OWNER_FILE): a
# lab killed with SIGKILL cannot remove its own, so the next run removes
# every directory whose owner is gone (`make_workdir`).
from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

import orjson

__all__ = [
    "MIN_RAM_FREE",
    "OWNER_FILE",
    "RAM_DIRS",
    "make_workdir",
    "remove_orphaned",
    "scratch_root",
]

OWNER_FILE = ".faultlab-owner"
_PREFIX = "faultlab-"

RAM_DIRS = (Path("/dev/shm"),)
# A small /dev/shm (containers often get 64 MB) would fill up under a long
# exploration and turn every later case into an I/O error: below this much
# free space the system temp dir is used instead.
MIN_RAM_FREE = 1 << 30


def _usable(path: Path) -> bool:
    try:
        return (
            path.is_dir()
            and os.access(path, os.W_OK | os.X_OK)
            and shutil.disk_usage(path).free >= MIN_RAM_FREE
        )
    except OSError:
        return False


def scratch_root(environ: Mapping[str, str] | None = None) -> Path:
    """The directory under which a run makes its temporary work dir."""
    env = os.environ if environ is None else environ
    chosen = env.get("FAULTLAB_SCRATCH") or env.get("TMPDIR")
    if chosen:
        return Path(chosen)
    for candidate in RAM_DIRS:
        if _usable(candidate):
            return candidate
    return Path(tempfile.gettempdir())


def _start_time(pid: int) -> int | None:
    """The start time of process `pid` (clock ticks since boot), None if it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    return int(stat.rpartition(b")")[2].split()[19])


def make_workdir(root: Path | None = None) -> Path:
    """A fresh run directory under `root` (default `scratch_root()`) that
    names its owner, this process; first removes the directories of owners
    that are gone."""
    where = scratch_root() if root is None else root
    remove_orphaned(where)
    path = Path(tempfile.mkdtemp(prefix=_PREFIX, dir=where))
    owner = {"pid": os.getpid(), "start": _start_time(os.getpid())}
    (path / OWNER_FILE).write_bytes(orjson.dumps(owner))
    return path


def remove_orphaned(root: Path) -> list[Path]:
    """Remove every run directory under `root` whose recorded owner is no
    longer running (its pid is gone, or names a process started at another
    time); a directory that names no owner (an older faultlab's) is left
    alone.  Returns what was removed."""
    removed = []
    with contextlib.suppress(OSError):
        for path in root.glob(_PREFIX + "*"):
            try:
                owner = orjson.loads((path / OWNER_FILE).read_bytes())
                pid, start = int(owner["pid"]), owner["start"]
            except (OSError, orjson.JSONDecodeError, KeyError, TypeError, ValueError):
                continue
            if _start_time(pid) != start or start is None:
                shutil.rmtree(path, ignore_errors=True)
                removed.append(path)
    return removed
