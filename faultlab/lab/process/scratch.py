# Where the lab's case directories live.  A SIGKILL leaves the page cache
# intact, so what a killed child wrote is there for its successor whether or
# not the medium under it is a disk: the children's fsyncs are real system
# calls either way, and power loss is judged from their write/fsync facts
# (faultlab/lab/faults/powerloss.py), never from the medium.  A RAM-backed directory
# therefore changes no verdict and removes a disk flush from every checkpoint
# of every child (about a quarter of a fork-mode case's time here).  An
# explicit choice always wins: FAULTLAB_SCRATCH, then TMPDIR.
from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

__all__ = ["MIN_RAM_FREE", "RAM_DIRS", "scratch_root"]

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
