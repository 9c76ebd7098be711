# The one place that opens files faultlab did not write itself: the files a
# user names on the command line (or in a pytest run: scenario files and
# folders, session logs, adapters) and the files a target writes that the lab
# reads or copies (its session log and world ledger, an agent's session
# files, the tails of its output, the files of a shard a merge copies).  It
# refuses at once whatever is not a regular file (a FIFO would block the read
# forever, /dev/zero would fill memory, a directory or a symlink loop would
# raise deep inside pathlib), never follows a target's symlink (O_NOFOLLOW),
# opens without blocking (O_NONBLOCK) and re-checks the open descriptor, and
# reads or copies at most a documented number of bytes (docs/cli.md,
# "Limits"; docs/security.md).  A user's file that is refused is a
# `UserFileError` (one line naming the file; the commands make it exit 2); a
# target's is a `TargetFileError` carrying the case's code
# (`TARGET_FILE_REFUSED`, `TARGET_OUTPUT_TOO_LARGE`).  It imports nothing
# else of faultlab, so the scenario loader, the lab's readers, the report
# writers and the CLI share it.
from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

__all__ = [
    "MAX_LOG_BYTES",
    "MAX_SCENARIO_BYTES",
    "MAX_TARGET_BYTES",
    "TAIL_BYTES",
    "TARGET_FILE_REFUSED",
    "TARGET_OUTPUT_TOO_LARGE",
    "TargetFileError",
    "UserFileError",
    "check_exists",
    "check_utf8",
    "copy_target",
    "copy_user_file",
    "file_kind",
    "files_in",
    "read_bytes",
    "read_tail",
    "read_target",
]

MAX_SCENARIO_BYTES = 4 << 20  # 4 MiB: a scenario is a short script (text uses `repeat`)
MAX_LOG_BYTES = 256 << 20  # 256 MiB: a session log the lab reads into memory whole
# 256 MiB: one file a target wrote (its log, its world ledger, an agent's
# session file) that the lab reads into memory or copies into a report.
MAX_TARGET_BYTES = 256 << 20
TAIL_BYTES = 64 << 10  # 64 KiB: what is kept of a target's stdout or stderr for a message

# The codes of a case whose target wrote a file the lab cannot read safely
# (faultlab/lab/oracle/codes.py explains them; a string here, so that this
# module imports nothing of faultlab).
TARGET_FILE_REFUSED = "TARGET_FILE_REFUSED"
TARGET_OUTPUT_TOO_LARGE = "TARGET_OUTPUT_TOO_LARGE"

_KINDS = (
    (stat.S_ISLNK, "a symbolic link"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a directory"),
)
AnyPath = str | os.PathLike[str]
_READ = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_CHUNK = 1 << 20


class UserFileError(ValueError):
    """A file the user named cannot be read as what it should be."""

    def __init__(self, path: str | Path, problem: str) -> None:
        self.path = str(path)
        self.problem = problem
        super().__init__(f"{path}: {problem}")


class TargetFileError(Exception):
    """A file a target wrote cannot be read safely: `code` is
    TARGET_FILE_REFUSED (not a regular file: a symlink, a FIFO, a device, a
    directory) or TARGET_OUTPUT_TOO_LARGE (over its limit)."""

    def __init__(self, path: str | Path, problem: str, code: str) -> None:
        self.path = str(path)
        self.problem = problem
        self.code = code
        super().__init__(f"{path}: {problem}")


class _Refused(Exception):
    """Why a file cannot be read; `too_large` tells the two codes apart."""

    def __init__(self, problem: str, *, too_large: bool = False) -> None:
        super().__init__(problem)
        self.problem, self.too_large = problem, too_large


def file_kind(mode: int) -> str:
    """What a file of mode `mode` is, in words ("a FIFO (named pipe)")."""
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


_kind = file_kind


def check_utf8(text: str, *, what: str) -> None:
    """A `UserFileError` when `text` (a path or an argument as Python decoded
    it) holds bytes that are not UTF-8: reports, logs and the probe protocol
    are UTF-8, so such a name cannot be carried through them."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        shown = os.fsencode(text)[:120]
        raise UserFileError(repr(shown)[1:], f"{what} is not valid UTF-8 (byte {exc.start}): "
                            "rename it") from None  # fmt: skip


def _stat(path: Path, what: str) -> os.stat_result:
    """`os.stat` with its failures as one line each."""
    check_utf8(str(path), what="the path")
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


def _too_big(size: int, limit: int, what: str) -> str:
    return f"is {size} bytes, more than the {limit}-byte limit for a {what} (docs/cli.md)"


def _open_regular(path: Path, *, what: str, follow: bool, limit: int | None) -> int:
    """A descriptor of the regular file `path` (at most `limit` bytes long).

    Without `follow` the path is looked at with lstat first (a symlink, a
    FIFO or a device is never opened) and opened with O_NOFOLLOW; the open
    is non-blocking and the descriptor is checked again (the path may have
    changed in between).  FileNotFoundError when there is none; `_Refused`
    says why it cannot be read."""
    if not follow:
        info = os.lstat(path)  # FileNotFoundError / NotADirectoryError pass up
        if not stat.S_ISREG(info.st_mode):
            raise _Refused(f"is {_kind(info.st_mode)}, not a regular file")
    try:
        fd = os.open(path, _READ | (0 if follow else os.O_NOFOLLOW))
    except (FileNotFoundError, NotADirectoryError):
        raise
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _Refused("is a symbolic link, not a regular file") from None
        raise _Refused(f"cannot read: {exc.strerror}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _Refused(f"is {_kind(info.st_mode)}, not a regular file")
        if limit is not None and info.st_size > limit:
            raise _Refused(_too_big(info.st_size, limit, what), too_large=True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _read_fd(fd: int, *, what: str, limit: int) -> bytes:
    """At most `limit` bytes of `fd`; a file that grows while read (or /proc)
    is bounded too: `_Refused` when there are more."""
    chunks: list[bytes] = []
    size = 0
    try:
        while size <= limit:
            chunk = os.read(fd, min(_CHUNK, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise _Refused(f"cannot read: {exc.strerror}") from None
    if size > limit:
        raise _Refused(_too_big(size, limit, what), too_large=True)
    return b"".join(chunks)


def _user_error(where: Path, refused: _Refused) -> Exception:
    return UserFileError(where, refused.problem)


def _target_error(where: Path, refused: _Refused) -> Exception:
    code = TARGET_OUTPUT_TOO_LARGE if refused.too_large else TARGET_FILE_REFUSED
    return TargetFileError(where, refused.problem, code)


@contextlib.contextmanager
def _regular(where: Path, *, what: str, follow: bool, limit: int | None,
             error: Callable[[Path, _Refused], Exception]) -> Iterator[int | None]:  # fmt: skip
    """`_open_regular` as a context: the descriptor (None when there is no
    such file), closed afterwards; a refusal, while opening or reading, is
    raised as `error` makes it."""
    try:
        fd = _open_regular(where, what=what, follow=follow, limit=limit)
    except (FileNotFoundError, NotADirectoryError):
        yield None
        return
    except _Refused as refused:
        raise error(where, refused) from None
    try:
        yield fd
    except _Refused as refused:
        raise error(where, refused) from None
    finally:
        os.close(fd)


def read_bytes(path: str | Path, *, what: str, limit: int, follow: bool = True) -> bytes:
    """The bytes of the regular file `path` a user named, at most `limit`
    of them; `follow=False`: a symlink is refused too (a shard's files).

    The type is checked before the open (a device is never opened) and again
    on the open descriptor (the path may have changed in between); the open is
    non-blocking, so not even a FIFO swapped in at that moment can hang it."""
    where = Path(path)
    if follow:
        check_exists(where, what=what)
    try:
        with _regular(where, what=what, follow=follow, limit=limit, error=_user_error) as fd:
            if fd is None:
                raise UserFileError(where, f"no such {what}")
            return _read_fd(fd, what=what, limit=limit)
    except ValueError as exc:  # an embedded NUL byte
        if isinstance(exc, UserFileError):
            raise
        raise UserFileError(repr(str(where)), f"not a valid path ({exc})") from None


def read_target(path: AnyPath, *, what: str, limit: int = MAX_TARGET_BYTES) -> bytes | None:
    """The bytes of the file `path` a target wrote (None when there is none):
    a regular file, never through a symlink, at most `limit` bytes;
    otherwise a `TargetFileError`."""
    where = Path(path)
    with _regular(where, what=what, follow=False, limit=limit, error=_target_error) as fd:
        return None if fd is None else _read_fd(fd, what=what, limit=limit)


def read_tail(path: AnyPath, *, limit: int = TAIL_BYTES) -> bytes:
    """The last `limit` bytes of the file `path` a target wrote (its stdout,
    its stderr), however large it is; b"" when there is none, and a line
    saying why when it is not a regular file.  Never raises, never blocks."""
    where = Path(path)
    try:
        with _regular(where, what="output", follow=False, limit=None,
                      error=_target_error) as fd:  # fmt: skip
            if fd is None:
                return b""
            start = max(0, os.fstat(fd).st_size - limit)
            return os.pread(fd, limit, start)
    except TargetFileError as refused:
        return f"[faultlab: {where.name} {refused.problem}]".encode()
    except (OSError, ValueError) as problem:
        return f"[faultlab: {where.name}: {problem}]".encode()


def _copy_fd(fd: int, dest: Path, *, what: str, limit: int) -> int:
    """Copy `fd` into a new file `dest` (never through a symlink), at most
    `limit` bytes; `_Refused` (and no `dest`) when there are more."""
    out = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC,
                  0o644)  # fmt: skip
    size = 0
    try:
        while True:
            chunk = os.read(fd, min(_CHUNK, limit + 1 - size))
            if not chunk:
                break
            size += len(chunk)
            if size > limit:
                raise _Refused(_too_big(size, limit, what), too_large=True)
            view = memoryview(chunk)
            while view:
                view = view[os.write(out, view) :]
    except BaseException:
        os.close(out)
        os.unlink(dest)
        raise
    os.close(out)
    return size


def copy_target(source: AnyPath, dest: AnyPath, *, what: str,
                limit: int = MAX_TARGET_BYTES) -> bool:  # fmt: skip
    """Copy the file `source` a target wrote to `dest` (the lab's), bounded
    as `read_target` reads; False when there is none."""
    where = Path(source)
    with _regular(where, what=what, follow=False, limit=limit, error=_target_error) as fd:
        if fd is None:
            return False
        _copy_fd(fd, Path(dest), what=what, limit=limit)
        return True


def copy_user_file(source: AnyPath, dest: AnyPath, *, what: str, limit: int) -> int:
    """Copy the regular file `source` of a user's input (a shard's file) to
    `dest`, never through a symlink, at most `limit` bytes; returns the
    bytes copied, or raises a `UserFileError` naming `source`."""
    where = Path(source)
    with _regular(where, what=what, follow=False, limit=limit, error=_user_error) as fd:
        if fd is None:
            raise UserFileError(where, f"no such {what}")
        try:
            return _copy_fd(fd, Path(dest), what=what, limit=limit)
        except OSError as exc:
            raise UserFileError(Path(dest), f"cannot write: {exc.strerror}") from None


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
    for path in found:  # a name that is not UTF-8 is refused by name too
        check_exists(path, what=what)
    if not found:
        raise UserFileError(where, f"no {what}s (*{suffix}) in this directory")
    return found
