# Copies of an agent's own session files into a case's folder (at the kill,
# and at the end), bounded and never through a link (faultlab.userfiles).
# An SQLite database in WAL mode keeps its latest transactions in `NAME-wal`
# (and its index in `NAME-shm`) until a checkpoint: a copy of the database
# alone opens empty or stale, so each file's `-wal`, `-shm` and `-journal`
# are copied beside its copy under the matching names, whether the adapter's
# glob names them or not.  The agent is dead (killed, or exited) when this
# runs, so the files are at rest: the copy is what a restarted agent opens.
from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from faultlab.userfiles import copy_target

__all__ = ["SQLITE_SIDECARS", "copy_session_files"]

SQLITE_SIDECARS = ("-wal", "-shm", "-journal")


def _sidecar_of(path: Path, names: set[str]) -> bool:
    """Whether `path` is the sidecar of another file in `names` (copied with it)."""
    return any(path.name.endswith(s) and path.name[: -len(s)] in names for s in SQLITE_SIDECARS)


def copy_session_files(files: Sequence[Path], where: Path, name: str,
                       read: Callable[[Path], Any | None],
                       shown: Callable[[str, Any], Path]) -> dict[str, str]:  # fmt: skip
    """Copy `files` into `where` as `NAME-I-FILE` (with their sidecars as
    `NAME-I-FILE-wal`, ...); `read(copy)` is what the adapter's reader makes
    of a copy (None: nothing), written by `shown(file name, value)`.  Returns
    the artifacts: `NAME:FILE` -> copy, `NAME:FILE:history` -> the reading."""
    copies: dict[str, str] = {}
    names = {p.name for p in files}
    for index, path in enumerate(files):
        if _sidecar_of(path, names):
            continue
        copy = where / f"{name}-{index}-{path.name}"
        # Bounded, a regular file only, never through a link: a FIFO, a link
        # to /dev/zero or a huge file is a TargetFileError (the engine makes
        # the case an error with its code).
        if not copy_target(path, copy, what="agent session file"):
            continue
        copies[f"{name}:{path.name}"] = str(copy)
        for suffix in SQLITE_SIDECARS:
            side = path.with_name(path.name + suffix)
            if copy_target(side, copy.with_name(copy.name + suffix), what="agent session file"):
                copies[f"{name}:{side.name}"] = str(copy.with_name(copy.name + suffix))
        history = read(copy)
        if history is not None:
            copies[f"{name}:{path.name}:history"] = str(shown(copy.name + ".history.json",
                                                              history))  # fmt: skip
    return copies
