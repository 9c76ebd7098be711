# The system-call recorder: ground truth about files that the target cannot
# fake.  The reference run of a scenario can be exec'd under strace; this
# module owns the strace command line and the parser that turns its output
# into file facts in the probe's own vocabulary (create, write, fsync,
# dirsync, truncate, link, rename, unlink), each placed between the probe
# reports it happened between.  The probe writes every report to its report
# pipe before its next system call when FAULTLAB_TRACED is set, and those
# pipe writes are in the same strace stream, so each report's position in
# the stream is exact.  Only files under the run's session directory are
# modelled (the log, its lock, the world ledger, temp and cut files); the
# probe pipes, stderr and everything else are ignored.
from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

__all__ = [
    "SYSCALLS",
    "SyscallTrace",
    "parse_strace",
    "strace_path",
    "strace_unusable",
    "traced_argv",
]

# What strace records: file calls, every kind of write and sync, and lseek
# (the position a plain write lands at).  Reads and stats are not traced.
SYSCALLS = (
    "open,openat,openat2,creat,write,pwrite64,writev,pwritev,pwritev2,fsync,fdatasync,"
    "sync_file_range,ftruncate,truncate,rename,renameat,renameat2,link,linkat,unlink,"
    "unlinkat,lseek,close"
)
# Write data is dumped in full up to this many bytes per call: the probe's
# reports are small; a longer write keeps its length (the return value).
_DATA = 1 << 20
_LINE = re.compile(r"^(\d+)\s+(.*)$")
_CALL = re.compile(r"^(\w+)\((.*)\)\s+=\s+(-?\d+|\?)(?:<([^>]*)>)?(.*)$")
_FD = re.compile(r"^(-?\d+|AT_FDCWD)(?:<([^>]*)>)?$")
_HEX = re.compile(r"\\x([0-9a-fA-F]{2})")


def strace_path() -> str | None:
    """The strace executable, or None where tracing is unavailable."""
    return shutil.which("strace")


@functools.cache
def strace_unusable(strace: str) -> str | None:
    """Why ``strace`` cannot trace a child here (None: it can).  Installed
    is not enough: a container may forbid ptrace, and then every traced
    reference run would fail instead of falling back.  Asked once per lab
    process."""
    argv = traced_argv(["true"], Path(os.devnull), strace)
    try:
        done = subprocess.run(argv, capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"strace could not be run: {exc}"
    if done.returncode != 0:
        lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
        return f"strace cannot trace here: {lines[-1] if lines else f'exit {done.returncode}'}"
    return None


def traced_argv(argv: list[str], output: Path, strace: str) -> list[str]:
    """``argv`` run under strace, following forks, writing to ``output``.
    ``--seccomp-bpf`` stops only at the traced calls (the rest run at full
    speed); ``-xx`` prints every string and path in hex, so no byte of a
    path or of the written data can confuse the parser."""
    return [
        strace, "-f", "-y", "-qq", "--seccomp-bpf", "-xx", "-s", str(_DATA),
        "-e", f"trace={SYSCALLS}", "-o", str(output), "--", *argv,
    ]  # fmt: skip


@dataclass(frozen=True, slots=True)
class SyscallTrace:
    """What the parser made of one traced run.

    ``reports``: the probe's report lines as the target wrote them, in
    order; ``facts``: the file facts the system calls show, each with
    ``after``, the number of reports written before it.  ``data``: the
    bytes of every write to a file of the session; a ``write`` fact's ``w``
    is its index here (``None``: strace printed fewer bytes than were
    written, a write longer than ``-s``).  Kept beside the facts, not in
    them, so a trace stays JSON (the SQLite states are rebuilt from these
    bytes: faultlab/lab/faults/sqlitestates.py).
    """

    reports: tuple[dict[str, Any], ...]
    facts: tuple[dict[str, Any], ...]
    data: tuple[bytes, ...] = ()


@dataclass
class _Open:
    path: str
    append: bool
    position: int = 0


@dataclass
class _Parser:
    root: str
    report_inode: int
    reports: list[dict[str, Any]] = field(default_factory=list)
    facts: list[dict[str, Any]] = field(default_factory=list)
    data: list[bytes] = field(default_factory=list)
    sizes: dict[str, int] = field(default_factory=dict)  # files this run knows
    directories: set[str] = field(default_factory=set)
    opened: dict[tuple[int, str], _Open] = field(default_factory=dict)
    pending_report: bytes = b""

    def inside(self, path: str) -> bool:
        return path == self.root or path.startswith(self.root + os.sep)

    def emit(self, kind: str, **facts: Any) -> None:
        self.facts.append({"fact": kind, **facts, "after": len(self.reports), "via": "strace"})

    def call(self, name: str, args: list[str], result: int, rpath: str | None) -> None:
        if result < 0 and name != "close":
            return  # a failed call changed nothing (its error is the target's business)
        handler = getattr(self, f"_on_{name}", None)
        if handler is not None:
            handler(args, result, rpath)

    # -- opening and closing ------------------------------------------------

    def _open(self, path: str | None, flags: str, fd: int, rpath: str | None) -> None:
        path = rpath or path
        if path is None or not self.inside(path):
            return
        if "O_DIRECTORY" in flags or os.path.isdir(path):
            self.directories.add(path)
            return
        if "O_CREAT" in flags and path not in self.sizes:
            self.sizes[path] = 0
            self.emit("create", file=path, size=0)
        elif "O_TRUNC" in flags and self.sizes.get(path, 0) > 0:
            self.sizes[path] = 0
            self.emit("truncate", file=path, size=0)
        self.sizes.setdefault(path, 0)
        self.opened[(fd, path)] = _Open(path, "O_APPEND" in flags)

    def _on_openat(self, args: list[str], result: int, rpath: str | None) -> None:
        if len(args) >= 3:
            self._open(_path(args[1], _fd(args[0])[1]), args[2], result, rpath)

    _on_openat2 = _on_openat

    def _on_open(self, args: list[str], result: int, rpath: str | None) -> None:
        if len(args) >= 2:
            self._open(_path(args[0], None), args[1], result, rpath)

    def _on_creat(self, args: list[str], result: int, rpath: str | None) -> None:
        if args:
            self._open(_path(args[0], None), "O_CREAT|O_TRUNC", result, rpath)

    def _on_close(self, args: list[str], result: int, rpath: str | None) -> None:
        fd, path = _fd(args[0]) if args else (-1, None)
        if path is not None:
            self.opened.pop((fd, path), None)

    # -- writing ------------------------------------------------------------

    def _file(self, arg: str) -> _Open | None:
        fd, path = _fd(arg)
        if path is None or not self.inside(path):
            return None
        return self.opened.setdefault((fd, path), _Open(path, False))

    def _write(self, args: list[str], count: int, at: int | None) -> None:
        _number, path = _fd(args[0])
        if path is not None and path == f"pipe:[{self.report_inode}]":
            self._report(b"".join(_bytes(a) for a in args[1:-1] or args[1:2]))
            return
        handle = self._file(args[0])
        if handle is None:
            return
        size = self.sizes.get(handle.path, 0)
        offset = size if handle.append and at is None else (handle.position if at is None else at)
        if at is None:
            handle.position = offset + count
        self.sizes[handle.path] = max(size, offset + count)
        written = b"".join(_bytes(a) for a in args[1:-1] or args[1:2])[:count]
        index: int | None = None
        if len(written) == count:
            index = len(self.data)
            self.data.append(written)
        self.emit("write", file=handle.path, offset=offset, bytes=count, w=index)

    def _on_write(self, args: list[str], result: int, rpath: str | None) -> None:
        if len(args) >= 2:
            self._write(args, result, None)

    _on_writev = _on_write

    def _on_pwrite64(self, args: list[str], result: int, rpath: str | None) -> None:
        if len(args) >= 4:
            self._write(args[:-1], result, _int(args[-1]))

    def _on_pwritev(self, args: list[str], result: int, rpath: str | None) -> None:
        if len(args) >= 4:
            self._write(args[:-1], result, _int(args[3]))

    _on_pwritev2 = _on_pwritev

    def _report(self, data: bytes) -> None:
        self.pending_report += data
        *lines, self.pending_report = self.pending_report.split(b"\n")
        for line in lines:
            try:
                message = orjson.loads(line)
            except orjson.JSONDecodeError:
                message = {"invalid": line.decode("utf-8", "replace")}
            self.reports.append(message if isinstance(message, dict) else {"invalid": line})

    def _on_lseek(self, args: list[str], result: int, rpath: str | None) -> None:
        handle = self._file(args[0]) if args else None
        if handle is not None:
            handle.position = result

    # -- syncing, truncating, naming -----------------------------------------

    def _on_fsync(self, args: list[str], result: int, rpath: str | None) -> None:
        _number, path = _fd(args[0]) if args else (-1, None)
        if path is None or not self.inside(path):
            return
        if path in self.directories or os.path.isdir(path):
            self.directories.add(path)
            self.emit("dirsync", dir=path)
        else:
            self.emit("fsync", file=path, size=self.sizes.get(path, 0))

    _on_fdatasync = _on_fsync

    def _on_ftruncate(self, args: list[str], result: int, rpath: str | None) -> None:
        handle = self._file(args[0]) if args else None
        if handle is not None and len(args) >= 2:
            self.sizes[handle.path] = _int(args[1])
            self.emit("truncate", file=handle.path, size=_int(args[1]))

    def _on_truncate(self, args: list[str], result: int, rpath: str | None) -> None:
        path = _path(args[0], None) if args else None
        if path is not None and self.inside(path) and len(args) >= 2:
            self.sizes[path] = _int(args[1])
            self.emit("truncate", file=path, size=_int(args[1]))

    def _name(self, kind: str, old: str | None, new: str | None) -> None:
        if old is None or new is None or not (self.inside(old) or self.inside(new)):
            return
        self.sizes[new] = self.sizes.get(old, 0)
        if kind == "rename":
            self.sizes.pop(old, None)
        self.emit(kind, file=new, source=old)

    def _on_rename(self, args: list[str], result: int, rpath: str | None) -> None:
        if len(args) >= 2:
            self._name("rename", _path(args[0], None), _path(args[1], None))

    def _on_link(self, args: list[str], result: int, rpath: str | None) -> None:
        if len(args) >= 2:
            self._name("link", _path(args[0], None), _path(args[1], None))

    def _on_renameat(self, args: list[str], result: int, rpath: str | None) -> None:
        if len(args) >= 4:
            old = _path(args[1], _fd(args[0])[1])
            self._name("rename", old, _path(args[3], _fd(args[2])[1]))

    _on_renameat2 = _on_renameat

    def _on_linkat(self, args: list[str], result: int, rpath: str | None) -> None:
        if len(args) >= 4:
            self._name("link", _path(args[1], _fd(args[0])[1]), _path(args[3], _fd(args[2])[1]))

    def _on_unlink(self, args: list[str], result: int, rpath: str | None) -> None:
        path = _path(args[0], None) if args else None
        if path is not None and self.inside(path) and self.sizes.pop(path, None) is not None:
            self.emit("unlink", file=path)

    def _on_unlinkat(self, args: list[str], result: int, rpath: str | None) -> None:
        if len(args) >= 2 and not (len(args) > 2 and "AT_REMOVEDIR" in args[2]):
            path = _path(args[1], _fd(args[0])[1])
            if path is not None and self.inside(path) and self.sizes.pop(path, None) is not None:
                self.emit("unlink", file=path)


# -- tokens -------------------------------------------------------------------


def _unhex(text: str) -> str:
    return _HEX.sub(lambda m: chr(int(m.group(1), 16)), text)


def _bytes(token: str) -> bytes:
    """The bytes of every quoted string in ``token`` (a writev's iovecs too)."""
    out = bytearray()
    for quoted in re.findall(r'"((?:\\x[0-9a-fA-F]{2})*)"', token):
        out += bytes.fromhex(quoted.replace("\\x", ""))
    return bytes(out)


def _fd(token: str) -> tuple[int, str | None]:
    match = _FD.match(token.strip())
    if match is None:
        return -1, None
    number = -100 if match.group(1) == "AT_FDCWD" else int(match.group(1))
    path = match.group(2)
    return number, None if path is None else os.fsdecode(_bytes(f'"{path}"') or b"") or None


def _path(token: str, base: str | None) -> str | None:
    token = token.strip()
    if not token.startswith('"'):
        return None
    path = os.fsdecode(_bytes(token))
    if not os.path.isabs(path) and base is not None:
        path = os.path.join(base, path)
    return os.path.normpath(path) if os.path.isabs(path) else None


def _int(token: str) -> int:
    try:
        return int(token.strip(), 0)
    except ValueError:
        return 0


def _split(args: str) -> list[str]:
    """Top-level comma-separated arguments (writev's ``[{...}, ...]`` stays one)."""
    parts: list[str] = []
    depth = 0
    start = 0
    quoted = False
    for index, char in enumerate(args):
        if char == '"':
            quoted = not quoted
        elif quoted:
            continue
        elif char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(args[start:index].strip())
            start = index + 1
    if args.strip():
        parts.append(args[start:].strip())
    return parts


def _calls(text: str) -> Iterator[tuple[str, str]]:
    """(pid, completed call text) in completion order, unfinished calls joined."""
    unfinished: dict[str, str] = {}
    for raw in text.splitlines():
        match = _LINE.match(raw)
        if match is None:
            continue
        pid, rest = match.groups()
        if rest.endswith("<unfinished ...>"):
            unfinished[pid] = rest[: -len("<unfinished ...>")].rstrip()
            continue
        if rest.startswith("<..."):
            head = unfinished.pop(pid, None)
            _, _, tail = rest.partition("resumed>")
            if head is None:
                continue
            rest = head + tail
        yield pid, rest


def parse_strace(text: str, root: str | Path, report_inode: int) -> SyscallTrace:
    """The file facts of the files under ``root`` and the probe reports written
    to the pipe ``report_inode``, from strace output made by `traced_argv`."""
    parser = _Parser(os.path.realpath(root), report_inode)
    for _pid, rest in _calls(text):
        match = _CALL.match(rest)
        if match is None:
            continue
        name, args, result, rpath, _tail = match.groups()
        value = -1 if result == "?" else int(result)
        resolved = None if rpath is None else os.fsdecode(_bytes(f'"{rpath}"'))
        parser.call(name, _split(args), value, resolved)
    return SyscallTrace(tuple(parser.reports), tuple(parser.facts), tuple(parser.data))
