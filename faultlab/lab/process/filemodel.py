# The Linux file semantics the system-call ground truth rests on: what each
# traced call does to the files of a session, as the kernel does it, told as
# file facts in the probe's vocabulary (create, write, fsync, dirsync,
# truncate, link, rename, unlink).  Writes go through the open file
# description their fd names (fdtables.py) to its inode, whatever names the
# inode has by then; every write on an O_APPEND description lands at the end
# of the file, pwrite's offset notwithstanding (Linux; Node's fs.writeSync
# issues exactly that); a write on an O_SYNC/O_DSYNC description, or with
# RWF_SYNC/RWF_DSYNC, is durable when it returns; fallocate grows or zeroes;
# syncfs and sync make everything durable, sync_file_range nothing.  A call
# whose effect on a session file the model cannot know (a shared writable
# mmap, io_uring, a copy between files, a rename exchange, a descriptor it
# never saw made) is named in `unsupported`, never guessed: the cases that
# need the ground truth then say TRACE_UNSUPPORTED.
from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from faultlab.lab.process.fdtables import Description, Inode, Table, Tables
from faultlab.lab.process.stracetext import Call, Started, as_bytes, as_fd, as_int, as_path

__all__ = ["MAX_WRITE_DATA", "FileModel"]

# Write data is kept in full up to this many bytes per call (strace's -s):
# the probe's reports are small; a longer write keeps its length only.
MAX_WRITE_DATA = 1 << 20
_SYNC_OPENS = {"O_SYNC", "O_DSYNC"}


@dataclass
class FileModel:
    """The session's files as the calls of one traced run left them, and the
    facts that say so (each with ``after``: the probe reports before it)."""

    root: str
    report_inode: int
    names: dict[str, Inode] = field(default_factory=dict)  # every session file's name
    reports: list[dict[str, Any]] = field(default_factory=list)
    facts: list[dict[str, Any]] = field(default_factory=list)
    data: list[bytes] = field(default_factory=list)
    unsupported: list[str] = field(default_factory=list)
    directories: set[str] = field(default_factory=set)
    tables: Tables = field(default_factory=Tables)
    _pending_report: bytes = b""

    @classmethod
    def over(cls, root: str, report_inode: int, existing: Mapping[str, int]) -> FileModel:
        """The model of a run under ``root`` whose files ``existing`` were
        already there with those sizes."""
        names = {path: Inode(size) for path, size in existing.items()}
        return cls(os.path.realpath(root), report_inode, names)

    def take(self, call: Call | Started) -> None:
        if self.tables.take(call) or isinstance(call, Started):
            return
        if call.result < 0:
            return  # a failed call changed nothing (its error is the target's business)
        handler = getattr(self, f"_on_{call.name}", None)
        if handler is not None:
            handler(call, self.tables.of(call.pid))

    # -- what the model says ----------------------------------------------------

    def inside(self, path: str | None) -> bool:
        return path is not None and (path == self.root or path.startswith(self.root + os.sep))

    def emit(self, kind: str, **facts: Any) -> None:
        self.facts.append({"fact": kind, **facts, "after": len(self.reports), "via": "strace"})

    def refuse(self, what: str) -> None:
        if what not in self.unsupported:
            self.unsupported.append(what)

    def _named(self, inode: Inode) -> list[str]:
        return [path for path, known in self.names.items() if known is inode]

    def _session_file(self, call: Call, table: Table) -> Description | None:
        """The description a call's fd names when it is a session file's (None:
        not one; refused: a descriptor of one the trace never saw made)."""
        fd, path = as_fd(call.args[0])
        description = table.fds.get(fd)
        if description is not None or not self.inside(path):
            return description
        assert path is not None
        if path not in self.directories and not os.path.isdir(path):
            self.refuse(f"{call.name} on {path} through fd {fd}, which the trace never saw made")
        return None

    # -- opening ------------------------------------------------------------------

    def _open(self, call: Call, table: Table, path: str | None, flags: str) -> None:
        fd = call.result
        table.close(fd)
        path = call.returned_path or path
        if path is None or not self.inside(path):
            return
        named = set(flags.replace("{", "|").replace("}", "|").replace("=", "|").split("|"))
        if "O_DIRECTORY" in named or os.path.isdir(path) or path in self.directories:
            self.directories.add(path)
            return
        inode = self.names.get(path)
        if inode is None:  # O_CREAT made it (or it was there before: size unknown, 0)
            inode = self.names[path] = Inode()
            if "O_CREAT" in named:
                self.emit("create", file=path, size=0)
        elif "O_TRUNC" in named and inode.size > 0:
            self._truncate(inode, 0)
        description = Description(inode, "O_APPEND" in named, bool(named & _SYNC_OPENS))
        table.put(fd, description, "O_CLOEXEC" in named)

    def _on_openat(self, call: Call, table: Table) -> None:
        if len(call.args) >= 3:
            base = as_fd(call.args[0])[1]
            self._open(call, table, as_path(call.args[1], base), call.args[2])

    _on_openat2 = _on_openat

    def _on_open(self, call: Call, table: Table) -> None:
        if len(call.args) >= 2:
            self._open(call, table, as_path(call.args[0], None), call.args[1])

    def _on_creat(self, call: Call, table: Table) -> None:
        if call.args:
            self._open(call, table, as_path(call.args[0], None), "O_WRONLY|O_CREAT|O_TRUNC")

    # -- writing --------------------------------------------------------------------

    def _write(self, call: Call, table: Table, buffers: str, at: int | None, flags: str) -> None:
        written = as_bytes(buffers)
        if as_fd(call.args[0])[1] == f"pipe:[{self.report_inode}]":
            self._report(written[: call.result])
            return
        description = self._session_file(call, table)
        if description is None:
            return
        inode, count = description.inode, call.result
        if description.append or "RWF_APPEND" in flags:
            offset = inode.size  # Linux: O_APPEND puts every write at the end, pwrite's too
        else:
            offset = description.position if at is None else at
        if at is None:
            description.position = offset + count
        inode.size = max(inode.size, offset + count)
        kept = written[:count]
        self._changed(inode, offset, count, kept if len(kept) == count else None)
        if description.sync or "RWF_SYNC" in flags or "RWF_DSYNC" in flags:
            self._synced(inode)

    def _changed(self, inode: Inode, offset: int, count: int, data: bytes | None) -> None:
        index: int | None = None
        if data is not None:
            index = len(self.data)
            self.data.append(data)
        for path in self._named(inode):  # an unlinked inode's bytes reach no file
            self.emit("write", file=path, offset=offset, bytes=count, w=index)

    def _synced(self, inode: Inode) -> None:
        for path in self._named(inode):
            self.emit("fsync", file=path, size=inode.size)

    def _on_write(self, call: Call, table: Table) -> None:
        if len(call.args) >= 2:
            self._write(call, table, call.args[1], None, "")

    _on_writev = _on_write

    def _on_pwrite64(self, call: Call, table: Table) -> None:
        if len(call.args) >= 4:
            self._write(call, table, call.args[1], as_int(call.args[3]), "")

    _on_pwritev = _on_pwrite64

    def _on_pwritev2(self, call: Call, table: Table) -> None:
        if len(call.args) >= 4:
            offset = as_int(call.args[3])  # -1: at the current position, as write
            flags = call.args[4] if len(call.args) > 4 else ""
            self._write(call, table, call.args[1], None if offset == -1 else offset, flags)

    def _report(self, data: bytes) -> None:
        self._pending_report += data
        *lines, self._pending_report = self._pending_report.split(b"\n")
        for line in lines:
            try:
                message = orjson.loads(line)
            except orjson.JSONDecodeError:
                message = {"invalid": line.decode("utf-8", "replace")}
            self.reports.append(message if isinstance(message, dict) else {"invalid": line})

    def _on_lseek(self, call: Call, table: Table) -> None:
        description = table.fds.get(as_fd(call.args[0])[0]) if call.args else None
        if description is not None:
            description.position = call.result

    def _on_fallocate(self, call: Call, table: Table) -> None:
        description = self._session_file(call, table) if len(call.args) >= 4 else None
        if description is None:
            return
        inode = description.inode
        mode, offset, length = call.args[1], as_int(call.args[2]), as_int(call.args[3])
        if "COLLAPSE_RANGE" in mode or "INSERT_RANGE" in mode or "UNSHARE" in mode:
            self.refuse(f"fallocate {mode} on {', '.join(self._named(inode))}")
        elif "PUNCH_HOLE" in mode or "ZERO_RANGE" in mode:  # zeroes inside the file
            end = min(offset + length, inode.size) if "KEEP_SIZE" in mode else offset + length
            if end > offset:
                inode.size = max(inode.size, end)
                zeros = bytes(end - offset) if end - offset <= MAX_WRITE_DATA else None
                self._changed(inode, offset, end - offset, zeros)
        elif "KEEP_SIZE" not in mode and offset + length > inode.size:  # grows with zeros
            self._truncate(inode, offset + length)

    def _on_mmap(self, call: Call, table: Table) -> None:
        if len(call.args) >= 5 and "PROT_WRITE" in call.args[2] and "MAP_SHARED" in call.args[3]:
            path = as_fd(call.args[4])[1]
            # SQLite's WAL index (-shm) is mapped so by design; it is a cache
            # that SQLite rebuilds from the WAL after a crash, so what a power
            # loss leaves in it never matters (sqlitestates.py keeps no -shm).
            if self.inside(path) and not str(path).endswith("-shm"):
                self.refuse(f"a shared writable mmap of {path} (its writes make no system call)")

    def _on_io_uring_setup(self, call: Call, table: Table) -> None:
        if len(call.args) >= 2 and "IORING_SETUP_SQPOLL" in call.args[1]:
            self.refuse("an io_uring with a kernel polling thread (its I/O makes no system call)")

    def _on_io_uring_enter(self, call: Call, table: Table) -> None:
        if len(call.args) >= 2 and as_int(call.args[1]) > 0:
            self.refuse("io_uring submissions (strace cannot see which files they write)")

    def _copy_into(self, call: Call, argument: int) -> None:
        path = as_fd(call.args[argument])[1] if len(call.args) > argument else None
        if self.inside(path):
            self.refuse(f"{call.name} into {path} (bytes that no traced call shows)")

    def _on_copy_file_range(self, call: Call, table: Table) -> None:
        self._copy_into(call, 2)

    def _on_splice(self, call: Call, table: Table) -> None:
        self._copy_into(call, 2)

    def _on_sendfile(self, call: Call, table: Table) -> None:
        self._copy_into(call, 0)

    # -- syncing, truncating, naming ----------------------------------------------

    def _on_fsync(self, call: Call, table: Table) -> None:
        path = as_fd(call.args[0])[1] if call.args else None
        if self.inside(path) and (path in self.directories or os.path.isdir(str(path))):
            self.directories.add(str(path))
            self.emit("dirsync", dir=path)
            return
        description = self._session_file(call, table) if call.args else None
        if description is not None:
            self._synced(description.inode)

    # fdatasync writes the size too when the data needs it to be read back.
    # sync_file_range is left out on purpose: it flushes no metadata and no
    # device cache, so it makes nothing durable.
    _on_fdatasync = _on_fsync

    def _on_syncfs(self, call: Call, table: Table) -> None:
        folders = self.directories | {os.path.dirname(path) for path in self.names}
        for directory in sorted(d for d in folders if self.inside(d)):
            self.emit("dirsync", dir=directory)
        for path, inode in self.names.items():
            self.emit("fsync", file=path, size=inode.size)

    _on_sync = _on_syncfs

    def _truncate(self, inode: Inode, size: int) -> None:
        inode.size = size
        for path in self._named(inode):
            self.emit("truncate", file=path, size=size)

    def _on_ftruncate(self, call: Call, table: Table) -> None:
        description = self._session_file(call, table) if len(call.args) >= 2 else None
        if description is not None:
            self._truncate(description.inode, as_int(call.args[1]))

    def _on_truncate(self, call: Call, table: Table) -> None:
        path = as_path(call.args[0], None) if call.args else None
        if path is not None and self.inside(path) and len(call.args) >= 2:
            inode = self.names.setdefault(path, Inode())
            self._truncate(inode, as_int(call.args[1]))

    def _name(self, kind: str, old: str | None, new: str | None) -> None:
        if old is None or new is None or not (self.inside(old) or self.inside(new)):
            return
        if old in self.directories:
            self.refuse(f"{kind} of the directory {old}")
            return
        inode = self.names.get(old) or Inode()
        if kind == "rename" and self.names.get(new) is inode and old in self.names:
            return  # rename(2): two names of one file (or one name twice) do nothing
        self.names[new] = inode
        if kind == "rename":
            self.names.pop(old, None)
        self.emit(kind, file=new, source=old)

    def _on_rename(self, call: Call, table: Table) -> None:
        if len(call.args) >= 2:
            self._name("rename", as_path(call.args[0], None), as_path(call.args[1], None))

    def _on_link(self, call: Call, table: Table) -> None:
        if len(call.args) >= 2:
            self._name("link", as_path(call.args[0], None), as_path(call.args[1], None))

    def _at_pair(self, call: Call) -> tuple[str | None, str | None]:
        old = as_path(call.args[1], as_fd(call.args[0])[1])
        return old, as_path(call.args[3], as_fd(call.args[2])[1])

    def _on_renameat(self, call: Call, table: Table) -> None:
        if len(call.args) >= 4:
            old, new = self._at_pair(call)
            flags = call.args[4] if len(call.args) > 4 else ""
            if "RENAME_EXCHANGE" in flags or "RENAME_WHITEOUT" in flags:
                if self.inside(old) or self.inside(new):
                    self.refuse(f"renameat2 {flags} of {old} and {new}")
                return
            self._name("rename", old, new)

    _on_renameat2 = _on_renameat

    def _on_linkat(self, call: Call, table: Table) -> None:
        if len(call.args) >= 4:
            self._name("link", *self._at_pair(call))

    def _unlink(self, path: str | None) -> None:
        if path is not None and self.inside(path) and self.names.pop(path, None) is not None:
            self.emit("unlink", file=path)

    def _on_unlink(self, call: Call, table: Table) -> None:
        if call.args:
            self._unlink(as_path(call.args[0], None))

    def _on_unlinkat(self, call: Call, table: Table) -> None:
        if len(call.args) >= 2 and not (len(call.args) > 2 and "AT_REMOVEDIR" in call.args[2]):
            self._unlink(as_path(call.args[1], as_fd(call.args[0])[1]))
