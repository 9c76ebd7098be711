# Which file each descriptor of a traced run refers to, as Linux keeps it:
# an inode per file (its names come and go with link, rename and unlink), an
# open file description per open (offset, O_APPEND, O_SYNC/O_DSYNC; shared by
# dup, fcntl(F_DUPFD) and fork), and an fd table per process (shared by its
# threads, CLONE_FILES; copied by fork; its close-on-exec fds dropped by
# execve).  filemodel.py asks it which description a call's fd names; this
# module takes the calls that only move descriptors around.
from __future__ import annotations

from dataclasses import dataclass, field

from faultlab.lab.process.stracetext import Call, Started, as_fd, as_int

__all__ = ["Description", "Inode", "Table", "Tables"]

_CLONES = ("clone", "clone3", "fork", "vfork")


@dataclass(eq=False)
class Inode:
    """One file's contents as far as the model needs them: its size."""

    size: int = 0


@dataclass(eq=False)
class Description:
    """An open file description: what dup, dup2 and fork share."""

    inode: Inode
    append: bool
    sync: bool  # O_SYNC/O_DSYNC: each write is durable when it returns
    position: int = 0


@dataclass(eq=False)
class Table:
    """One process's fd table (its threads share it)."""

    fds: dict[int, Description] = field(default_factory=dict)
    cloexec: set[int] = field(default_factory=set)

    def copy(self) -> Table:
        return Table(dict(self.fds), set(self.cloexec))

    def close(self, fd: int) -> None:
        self.fds.pop(fd, None)
        self.cloexec.discard(fd)

    def put(self, fd: int, description: Description, cloexec: bool) -> None:
        self.close(fd)
        self.fds[fd] = description
        if cloexec:
            self.cloexec.add(fd)

    def dup(self, old: int, new: int, cloexec: bool) -> None:
        if old == new:
            return
        self.close(new)
        if old in self.fds:
            self.put(new, self.fds[old], cloexec)


@dataclass
class Tables:
    """Every process's fd table, found by the thread id strace prints."""

    by_pid: dict[str, Table] = field(default_factory=dict)
    _first: Table | None = None
    _clones: dict[str, bool] = field(default_factory=dict)  # a clone under way: shares fds?
    _guessed: set[str] = field(default_factory=set)  # first seen before any clone named it

    def of(self, pid: str) -> Table:
        """The fd table of thread ``pid``.  A thread first seen while a clone is
        under way is that clone's child (strace may print the child's first
        calls before the clone returns); one seen otherwise shares the first
        process's table (strace showed no clone for it)."""
        table = self.by_pid.get(pid)
        if table is not None:
            return table
        if self._first is None:
            table = self._first = Table()
        elif self._clones:
            parent = next(reversed(self._clones))
            table = self.of(parent) if self._clones[parent] else self.of(parent).copy()
        else:
            table = self._first
            self._guessed.add(pid)
        self.by_pid[pid] = table
        return table

    def take(self, call: Call | Started) -> bool:
        """Apply a call that only moves descriptors; False: not one of those."""
        if isinstance(call, Started):
            if call.name in _CLONES:
                self._clones[call.pid] = "CLONE_FILES" in call.text
            return True
        handler = getattr(self, f"_on_{call.name}", None)
        if handler is None:
            return False
        if call.result >= 0 or call.name == "close":  # Linux closes even on EINTR, EIO
            handler(call, self.of(call.pid))
        elif call.name in _CLONES:
            self._clones.pop(call.pid, None)
        return True

    def _on_clone(self, call: Call, table: Table) -> None:
        self._clones.pop(call.pid, None)
        child = str(call.result)
        if child in self.by_pid and child not in self._guessed:
            return  # given its table when it first ran, from this clone's own flags
        share = "CLONE_FILES" in ",".join(call.args)
        new = table if share else table.copy()
        own = self.by_pid.get(child)
        if own is not None and own is not new:  # what it did before we knew: kept
            new.fds.update(own.fds)
            new.cloexec |= own.cloexec
        self.by_pid[child] = new
        self._guessed.discard(child)

    _on_clone3 = _on_fork = _on_vfork = _on_clone

    def _on_execve(self, call: Call, table: Table) -> None:
        kept = Table({fd: d for fd, d in table.fds.items() if fd not in table.cloexec})
        self.by_pid[call.pid] = kept

    _on_execveat = _on_execve

    def _on_dup(self, call: Call, table: Table) -> None:
        if call.args:
            table.dup(as_fd(call.args[0])[0], call.result, False)

    def _on_dup2(self, call: Call, table: Table) -> None:
        if len(call.args) >= 2:
            cloexec = len(call.args) > 2 and "O_CLOEXEC" in call.args[2]
            table.dup(as_fd(call.args[0])[0], call.result, cloexec)

    _on_dup3 = _on_dup2

    def _on_fcntl(self, call: Call, table: Table) -> None:
        if len(call.args) < 2:
            return
        fd, command = as_fd(call.args[0])[0], call.args[1]
        argument = call.args[2] if len(call.args) > 2 else ""
        if command in ("F_DUPFD", "F_DUPFD_CLOEXEC"):
            table.dup(fd, call.result, command == "F_DUPFD_CLOEXEC")
        elif command == "F_SETFD":
            (table.cloexec.add if "FD_CLOEXEC" in argument else table.cloexec.discard)(fd)
        elif command == "F_SETFL" and fd in table.fds:
            # O_APPEND can be switched so; O_SYNC and O_DSYNC cannot (Linux).
            table.fds[fd].append = "O_APPEND" in argument

    _on_fcntl64 = _on_fcntl

    def _on_close(self, call: Call, table: Table) -> None:
        if call.args:
            table.close(as_fd(call.args[0])[0])

    def _on_close_range(self, call: Call, table: Table) -> None:
        if len(call.args) >= 2:
            low, high = as_int(call.args[0]), as_int(call.args[1])
            only_mark = len(call.args) > 2 and "CLOSE_RANGE_CLOEXEC" in call.args[2]
            for fd in [fd for fd in table.fds if low <= fd <= high]:
                if only_mark:
                    table.cloexec.add(fd)
                else:
                    table.close(fd)
