# The one place that opens the files a user names on the command line (or in
# a pytest run): scenario files, scenario directories, session logs.  It
# refuses at once whatever is not a regular file (a FIFO would block the read
# forever, /dev/zero would fill memory, a directory or a symlink loop would
# raise deep inside pathlib) and reads at most a documented number of bytes
# (docs/cli.md, "Limits").  Every refusal is a `UserFileError`: one line that
# names the file; the commands turn it into exit 2.  It imports nothing else
# of faultlab, so the scenario loader, the lab's readers and the CLI share it.
from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

__all__ = [
    "MAX_LOG_BYTES",
    "MAX_SCENARIO_BYTES",
    "UserFileError",
    "check_exists",
    "files_in",
    "read_bytes",
]

MAX_SCENARIO_BYTES = 4 << 20  # 4 MiB: a scenario is a short script (text uses `repeat`)
MAX_LOG_BYTES = 256 << 20  # 256 MiB: a session log the lab reads into memory whole

_KINDS = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a directory"),
)


class UserFileError(ValueError):
    """A file the user named cannot be read as what it should be."""

    def __init__(self, path: str | Path, problem: str) -> None:
        self.path = str(path)
        self.problem = problem
        super().__init__(f"{path}: {problem}")


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _stat(path: Path, what: str) -> os.stat_result:
    """`os.stat` with its failures as one line each."""
    try:
        return os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            problem = "is a symlink loop (too many levels of symbolic links)"
            raise UserFileError(path, problem) from None
        if exc.errno == errno.ENOENT:
            dangling = " (a dangling symlink)" if os.path.islink(path) else ""
            raise UserFileError(path, f"no such {what}{dangling}") from None
        if exc.errno == errno.ENOTDIR:
            raise UserFileError(path, f"no such {what} (a part of the path is a file)") from None
        raise UserFileError(path, f"cannot read: {exc.strerror}") from None
    except ValueError as exc:  # an embedded NUL byte
        raise UserFileError(repr(str(path)), f"not a valid path ({exc})") from None


def check_exists(path: str | Path, *, what: str, directory_ok: bool = False) -> bool:
    """Whether `path` is a directory (True) or a regular file (False); a
    `UserFileError` when it is missing, a loop, or something else."""
    where = Path(path)
    mode = _stat(where, what).st_mode
    if stat.S_ISDIR(mode):
        if directory_ok:
            return True
        raise UserFileError(where, f"is a directory, not a {what}")
    if not stat.S_ISREG(mode):
        must = "a regular file or a directory" if directory_ok else "a regular file"
        raise UserFileError(where, f"is {_kind(mode)}; a {what} must be {must}")
    return False


def read_bytes(path: str | Path, *, what: str, limit: int) -> bytes:
    """The bytes of the regular file `path`, at most `limit` of them.

    The type is checked before the open (a device is never opened) and again
    on the open descriptor (the path may have changed in between); the open is
    non-blocking, so not even a FIFO swapped in at that moment can hang it."""
    where = Path(path)
    check_exists(where, what=what)
    try:
        fd = os.open(where, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as exc:
        raise UserFileError(where, f"cannot read: {exc.strerror}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UserFileError(where, f"is {_kind(info.st_mode)}, not a regular file")
        if info.st_size > limit:
            raise UserFileError(where, _too_big(info.st_size, limit, what))
        chunks: list[bytes] = []
        size = 0
        while size <= limit:  # a file that grows while read (or /proc) is bounded too
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise UserFileError(where, f"cannot read: {exc.strerror}") from None
    finally:
        os.close(fd)
    if size > limit:
        raise UserFileError(where, _too_big(size, limit, what))
    return b"".join(chunks)


def _too_big(size: int, limit: int, what: str) -> str:
    return f"is {size} bytes, more than the {limit}-byte limit for a {what} (docs/cli.md)"


def files_in(directory: str | Path, *, suffix: str, what: str) -> list[Path]:
    """The regular files named `*suffix` in `directory`, sorted.  An entry of
    that name that is not a regular file (a loop, a dangling link, a FIFO, a
    directory) is refused by name; a directory with none is refused too."""
    where = Path(directory)
    try:
        names = sorted(os.listdir(where))
    except OSError as exc:
        raise UserFileError(where, f"cannot list the directory: {exc.strerror}") from None
    found = [where / name for name in names if name.endswith(suffix)]
    for path in found:
        check_exists(path, what=what)
    if not found:
        raise UserFileError(where, f"no {what}s (*{suffix}) in this directory")
    return found
