# A black-box agent's whole process tree, contained: the lab's side of the
# per-case supervisor (reaper.py).  Real agents start helpers that a process
# group kill misses (Codex puts its MCP servers in groups of their own; a
# hostile target forks a grandchild that calls setsid and ignores SIGTERM).
# The supervisor is a child subreaper, so every orphan of the tree re-parents
# to it and is found and killed; this module starts it, reads the agent's
# status from it, asks it to kill, and proves with `leftovers` that nothing of
# a case outlives it.  Linux only (PR_SET_CHILD_SUBREAPER).
from __future__ import annotations

import contextlib
import os
import select
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from faultlab.lab.errors import LabUsageError
from faultlab.userfiles import read_tail

__all__ = ["FREEZER", "REAPER", "ContainedProcess", "TreeError", "close_all", "leftovers"]

REAPER = Path(__file__).with_name("reaper.py")
FREEZER = "/sys/fs/cgroup/freezer"  # cgroup v1's freezer hierarchy (this machine's)
_OPEN: set[ContainedProcess] = set()  # started and not closed yet
_START_WITHIN = 30.0  # seconds the supervisor may take to report the agent's pid


class TreeError(Exception):
    """The supervisor failed: it did not answer in time or processes survived."""


def close_all() -> None:
    """Kill every open contained tree (on interrupt of the lab).  Safe from any
    thread: it only asks each supervisor to kill and waits for it to exit; the
    case thread that owns a tree still reads its last reports and closes its
    pipes (closing them from here raced that thread's reads: EBADF, or a read of
    whatever file reused the number)."""
    for proc in list(_OPEN):
        proc.stop()


@dataclass(eq=False)
class ContainedProcess:
    """An agent under its own supervisor; every descendant stays findable."""

    pid: int  # the agent
    supervisor: subprocess.Popen[bytes]
    _control: int  # the lab's write end: its EOF tells the supervisor the lab is gone
    _status: int  # the supervisor's reports, read by the lab
    _buffer: bytes = b""
    _lines: list[str] = field(default_factory=list)
    returncode: int | None = None  # the agent's status, once it exited (-SIG: killed)
    _done: bool = False  # the supervisor said "done" or its pipe reached EOF
    problems: list[str] = field(default_factory=list)  # the supervisor's "error" lines
    namespace_init: int = 0  # the init of the tree's own PID namespace, 0 if none
    networked: bool = False  # the tree has a network namespace of its own (loopback only)
    _pipes_lock: threading.Lock = field(default_factory=threading.Lock)  # writes vs close
    _pipes_closed: bool = False

    @property
    def namespaced(self) -> bool:
        """Whether the tree has a PID namespace of its own (killed whole by the kernel)."""
        return self.namespace_init != 0

    @property
    def orphans_parent(self) -> int:
        """The pid a descendant re-parents to when its parent dies: the
        namespace's init, or else the supervisor (a subreaper)."""
        return self.namespace_init or self.supervisor.pid

    @classmethod
    def start(
        cls,
        argv: Sequence[str],
        *,
        cwd: str | os.PathLike[str],
        env: Mapping[str, str],
        stdin_path: str | os.PathLike[str] | None,
        stdout_path: str | os.PathLike[str],
        stderr_path: str | os.PathLike[str],
        pass_fds: Sequence[int] = (),
        cgroup: bool | None = None,
        pidns: bool | None = None,
        forward: Mapping[int, str] | None = None,
    ) -> ContainedProcess:
        """Start `argv` under a fresh supervisor, stdin from a file (or
        /dev/null), stdout and stderr to files (the supervisor's own errors go
        to stderr too).  The agent leads a session of its own.  With `cgroup`
        (None: when FAULTLAB_CGROUP=1 and the freezer hierarchy is writable)
        the tree also gets a
        freezer cgroup: its member list replaces scans of all of /proc.  With
        `pidns` (None: unless FAULTLAB_PIDNS=0) the tree gets a PID namespace
        of its own where the kernel allows one (root): the kernel then kills
        it whole, and `namespaced` says whether it got one.  With `forward`
        ({port: unix socket path}) the tree also gets a network namespace
        with loopback only, unless FAULTLAB_NETNS=0 or the kernel refuses:
        127.0.0.1:port inside is relayed to the lab's Unix socket at path,
        and nothing else is reachable; `networked` says whether it got one
        (if not, the agent shares the lab's network)."""
        if not sys.platform.startswith("linux"):
            raise LabUsageError("containing an agent's process tree needs Linux (a subreaper)")
        if not argv:
            raise LabUsageError("the agent command is empty")
        if cgroup is None:
            # Opt-in (FAULTLAB_CGROUP=1): on this sandbox a cgroup per case kept
            # its init's cgroup reaper busy (docs/decisions.md); the subreaper
            # alone finds every process, with /proc scans.
            cgroup = os.environ.get("FAULTLAB_CGROUP") == "1" and os.access(FREEZER, os.W_OK)
        if pidns is None:
            pidns = os.environ.get("FAULTLAB_PIDNS") != "0"
        netns = bool(forward) and os.environ.get("FAULTLAB_NETNS") != "0"
        chosen = (("freezer", cgroup), ("pidns", pidns), ("netns", netns))
        options = ",".join(name for name, on in chosen if on)
        for path in (forward or {}).values():
            if ";" in path or "=" in path:
                raise LabUsageError(f"a relayed socket path may not hold ';' or '=': {path}")
        relays = ";".join(f"{port}={path}" for port, path in (forward or {}).items()) or "-"
        control_r, control_w = os.pipe()
        status_r, status_w = os.pipe()
        command = [
            sys.executable, "-I", "-S", str(REAPER),
            str(control_r), str(status_w), str(os.getpid()), options or "-", relays,
            "--", *argv,
        ]  # fmt: skip
        try:
            with contextlib.ExitStack() as files:
                stdin = files.enter_context(open(stdin_path or os.devnull, "rb"))
                stdout = files.enter_context(open(stdout_path, "wb"))
                stderr = (
                    stdout if stderr_path == stdout_path
                    else files.enter_context(open(stderr_path, "wb"))
                )  # fmt: skip
                supervisor = subprocess.Popen(
                    command, stdin=stdin, stdout=stdout, stderr=stderr, cwd=cwd,
                    env=dict(env), pass_fds=(control_r, status_w, *pass_fds),
                    start_new_session=True,  # a terminal's ^C is the lab's to handle
                )  # fmt: skip
        except BaseException:
            for fd in (control_r, control_w, status_r, status_w):
                os.close(fd)
            raise
        os.close(control_r)
        os.close(status_w)
        proc = cls(0, supervisor, control_w, status_r)
        _OPEN.add(proc)
        try:
            first = proc._next_line(_START_WITHIN)
        except BaseException:
            proc.close()
            raise
        if first is None or not first.startswith("pid "):
            proc.close()
            reason = first[len("error ") :] if first else "the supervisor did not start"
            if not first:  # its own error went to the agent's stderr file
                tail = read_tail(stderr_path, limit=4096).decode("utf-8", "replace")
                reason += f": {tail.strip().splitlines()[-1]}" if tail.strip() else ""
            raise LabUsageError(reason)
        fields = first.split()
        proc.pid = int(fields[1])
        if "pidns" in fields:
            proc.namespace_init = int(fields[fields.index("pidns") + 1])
        proc.networked = "netns" in fields
        return proc

    # -- the supervisor's reports ---------------------------------------------

    def _next_line(self, timeout: float) -> str | None:
        """The next report line within `timeout`; None at EOF or time-out."""
        deadline = time.monotonic() + timeout
        while not self._lines:
            if self._done:
                return None
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            readable, _, _ = select.select([self._status], [], [], remaining)
            if not readable:
                return None
            data = os.read(self._status, 4096)
            if not data:
                self._done = True
                continue
            *lines, self._buffer = (self._buffer + data).split(b"\n")
            self._lines.extend(line.decode("utf-8", "replace") for line in lines)
        line = self._lines.pop(0)
        self._take(line)
        return line

    def _take(self, line: str) -> None:
        if line.startswith("exit "):
            self.returncode = int(line.split()[1])
        elif line.startswith("error "):
            self.problems.append(line[len("error ") :])
        elif line == "done":
            self._done = True

    def _read_until(self, wanted: str, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while (line := self._next_line(max(0.0, deadline - time.monotonic()))) is not None:
            if line == wanted or line.startswith(wanted):
                return True
        return False

    # -- the public API ---------------------------------------------------------

    def wait(self, timeout: float) -> int | None:
        """The agent's exit status (negative: killed by that signal), or None
        if it did not exit within `timeout` seconds."""
        if self.returncode is None:
            self._read_until("exit ", timeout)
        return self.returncode

    def descendants(self) -> list[psutil.Process]:
        """Every live process of the tree (the agent, its helpers, orphans)."""
        try:
            found = psutil.Process(self.supervisor.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return []
        live = []
        for proc in found:
            if proc.pid == self.namespace_init:  # the tree's plumbing, not the agent's
                continue
            with contextlib.suppress(psutil.Error):
                if proc.status() != psutil.STATUS_ZOMBIE:
                    live.append(proc)
        return live

    def kill_agent(self, timeout: float = 30.0) -> int | None:
        """SIGKILL only the agent's own process group (freeze, then kill);
        helpers it put in other groups or sessions live on.  Returns the
        agent's status."""
        if not self._done:
            self._command(b"A")
            if not self._read_until("agent-killed", timeout):
                raise TreeError(f"the supervisor did not kill the agent within {timeout:g}s")
        return self.returncode

    def kill_tree(self, timeout: float = 30.0) -> int | None:
        """SIGKILL the agent and every descendant (the case's kill), then reap
        the supervisor.  Returns the agent's status."""
        if self.supervisor.returncode is None:
            self._command(b"T")
            self._read_until("done", timeout)
            try:
                self.supervisor.wait(timeout)
            except subprocess.TimeoutExpired:
                self._kill_from_lab()
                raise TreeError(f"the supervisor did not finish within {timeout:g}s") from None
            if self.problems:
                raise TreeError("; ".join(self.problems))
        return self.returncode

    def close(self) -> None:
        """Kill whatever is left of the tree, reap the supervisor, close the pipes."""
        if self not in _OPEN:
            return
        try:
            with contextlib.suppress(TreeError):
                self.kill_tree()
        finally:
            if self.supervisor.returncode is None:  # it failed: the lab cleans up itself
                self._kill_from_lab()
            with self._pipes_lock:
                self._pipes_closed = True
                for fd in (self._control, self._status):
                    with contextlib.suppress(OSError):
                        os.close(fd)
            _OPEN.discard(self)

    def stop(self, timeout: float = 30.0) -> None:
        """Ask the supervisor to kill the whole tree and wait for it to exit,
        without reading its reports (another thread may be reading them)."""
        self._command(b"T")
        try:
            self.supervisor.wait(timeout)
        except subprocess.TimeoutExpired:
            self._kill_from_lab()

    def _command(self, byte: bytes) -> None:
        with self._pipes_lock, contextlib.suppress(BrokenPipeError):  # it already exited
            if not self._pipes_closed:
                os.write(self._control, byte)

    def _kill_from_lab(self) -> None:
        """The fallback when the supervisor fails: freeze and kill its tree from
        here (psutil), then the supervisor itself."""
        for _ in range(100):
            procs = self.descendants()
            if not procs:
                break
            for proc in procs:
                with contextlib.suppress(psutil.Error):
                    proc.suspend()
            for proc in procs:
                with contextlib.suppress(psutil.Error):
                    proc.kill()
            psutil.wait_procs(procs, timeout=1.0)
        self.supervisor.kill()
        self.supervisor.wait(10)

    def __enter__(self) -> ContainedProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def leftovers(marker: str) -> list[psutil.Process]:
    """Every live process whose command line or initial environment holds
    `marker` (tests give each case a unique one): what escaped a kill."""
    found = []
    me = os.getpid()
    for proc in psutil.process_iter(["pid", "cmdline", "status"]):
        if proc.info["pid"] == me or proc.info["status"] == psutil.STATUS_ZOMBIE:
            continue
        if marker in " ".join(proc.info["cmdline"] or ()):
            found.append(proc)
            continue
        with contextlib.suppress(psutil.Error):
            if any(marker in value for value in proc.environ().values()):
                found.append(proc)
    return found
