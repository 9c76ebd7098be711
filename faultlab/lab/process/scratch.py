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
# every directory whose owner is gone (`make_workdir`), there and in the
# system temp dir, where the short-pathed socket folders live (`owned_dir`).
# A scratch root that is missing or not a writable directory is a usage
# error, said in one line, before anything runs.
from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

import orjson

from faultlab.lab.errors import LabUsageError

__all__ = [
    "MIN_RAM_FREE",
    "OWNER_FILE",
    "RAM_DIRS",
    "make_workdir",
    "owned_dir",
    "owner_gone",
    "remove_orphaned",
    "scratch_root",
    "write_owner",
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


def _checked_root(where: Path) -> Path:
    """`where` if it is a writable directory; else a LabUsageError in one line
    naming the variable that chose it."""
    named = ("FAULTLAB_SCRATCH" if os.environ.get("FAULTLAB_SCRATCH")
             else "TMPDIR" if os.environ.get("TMPDIR") else "the scratch root")  # fmt: skip
    try:
        is_dir = where.is_dir()
    except (OSError, ValueError):
        is_dir = False
    if not is_dir:
        state = "is not a directory" if os.path.lexists(where) else "does not exist"
        raise LabUsageError(f"{named}={where}: {state} (faultlab's scratch space: set "
                            "FAULTLAB_SCRATCH or TMPDIR to a writable directory)")  # fmt: skip
    if not os.access(where, os.W_OK | os.X_OK):
        raise LabUsageError(f"{named}={where}: not writable (faultlab's scratch space: set "
                            "FAULTLAB_SCRATCH or TMPDIR to a writable directory)")  # fmt: skip
    return where


def owned_dir(prefix: str, root: Path | None = None) -> Path:
    """A fresh directory `root/<prefix>XXXX` (default root: the system temp
    dir) that names its owner, this process, so that the next run removes
    it if this one is killed before it can (`remove_orphaned`)."""
    where = Path(tempfile.gettempdir()) if root is None else root
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=where))
    write_owner(path)
    return path


def write_owner(path: Path) -> None:
    """Record this process as the owner of the directory `path`."""
    owner = {"pid": os.getpid(), "start": _start_time(os.getpid())}
    (path / OWNER_FILE).write_bytes(orjson.dumps(owner))


def owner_gone(path: Path) -> bool | None:
    """Whether the owner the directory `path` records is no longer running
    (its pid is gone, or names a process started at another time); None when
    it records none (an older faultlab's, or not faultlab's)."""
    try:
        owner = orjson.loads((path / OWNER_FILE).read_bytes())
        pid, start = int(owner["pid"]), owner["start"]
    except (OSError, orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        return None
    return start is None or _start_time(pid) != start


def make_workdir(root: Path | None = None) -> Path:
    """A fresh run directory under `root` (default `scratch_root()`) that
    names its owner, this process; first removes the directories of owners
    that are gone, there and in the system temp dir."""
    where = _checked_root(scratch_root() if root is None else root)
    remove_orphaned(where)
    system = Path(tempfile.gettempdir())
    if system != where:
        remove_orphaned(system)
    return owned_dir(_PREFIX, where)


def remove_orphaned(root: Path) -> list[Path]:
    """Remove every run directory under `root` whose recorded owner is no
    longer running (its pid is gone, or names a process started at another
    time); a directory that names no owner (an older faultlab's) is left
    alone.  Returns what was removed."""
    removed = []
    with contextlib.suppress(OSError):
        for path in root.glob(_PREFIX + "*"):
            if owner_gone(path):
                shutil.rmtree(path, ignore_errors=True)
                removed.append(path)
    return removed
