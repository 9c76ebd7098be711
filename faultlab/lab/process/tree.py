# One process the lab started, contained, whichever drive started it: the
# handle every drive holds (the classic probe's `Child` and the ACP client's
# `AcpChild` are given one; the black-box agent's and the app's runs are
# one).  Exec'd (`start`), it runs under a per-case supervisor of its own
# (reaper.py: a child subreaper, a PID namespace and a loopback-only network
# namespace where allowed), which reports its status and kills its whole
# tree when asked; forked (`fork`), its fork server contains it (a PID
# namespace of its own where allowed, subreapers elsewhere:
# faultlab/forking/contain.py), reaps it and reports its status once what
# it left is gone.  Either way it is started, signalled (its process group),
# killed (its whole tree) and reaped (by its one reaper, never here) the
# same way, joins the lab's one registry of live processes (live.py) while
# it is open, and `leftovers` proves that nothing of a case outlives it.
# Linux only (PR_SET_CHILD_SUBREAPER).
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import IO

import psutil

from faultlab.lab.errors import LabUsageError
from faultlab.lab.process.childproc import ChildHung, signal_group, sweep_group
from faultlab.lab.process.forkserver import ForkServer, pidns_wanted
from faultlab.lab.process.live import join, leave, stopping
from faultlab.lab.process.supervisor import FREEZER, REAPER, StatusPipe, TreeError
from faultlab.userfiles import read_tail

__all__ = ["FREEZER", "REAPER", "ContainedProcess", "Stdio", "TreeError", "leftovers"]

_START_WITHIN = 30.0  # seconds the supervisor may take to report the agent's pid
_KILLED_WITHIN = 30.0  # seconds a killed tree may take to be gone
# Where a child's stdin, stdout or stderr comes from or goes: a file's path,
# or an open fd (a pipe) the child is given.
Stdio = str | os.PathLike[str] | int


@dataclass(eq=False)
class ContainedProcess:
    """A process and every process it starts, contained until it is closed."""

    pid: int  # as the lab sees it (the child's own view may differ in its namespace)
    # Exec'd: its per-case supervisor and the supervisor's reports.
    supervisor: subprocess.Popen[bytes] | None = None
    _reports: StatusPipe | None = None
    # Forked: its server's report of its status.
    _exit: Future[int] | None = None
    returncode: int | None = None  # its status, once it exited (-SIG: killed)
    namespace_init: int = 0  # exec'd: the init of the tree's own PID namespace, 0 if none
    networked: bool = False  # exec'd: a network namespace of its own (loopback only)
    _lock: threading.RLock = field(default_factory=threading.RLock)  # the reports' reader
    _closed: bool = False

    @property
    def forked(self) -> bool:
        """Forked by a fork server (else exec'd under its own supervisor)."""
        return self.supervisor is None

    @property
    def problems(self) -> list[str]:
        """What its supervisor reported as failed ("error" lines)."""
        return self._reports.problems if self._reports is not None else []

    @property
    def names_looked_up(self) -> list[str]:
        """The names the tree looked up in its network namespace, each once,
        as read so far (the resolver stub answered each NXDOMAIN)."""
        return list(self._reports.names) if self._reports is not None else []

    @property
    def namespaced(self) -> bool:
        """Whether an exec'd tree has a PID namespace of its own (killed whole
        by the kernel)."""
        return self.namespace_init != 0

    @property
    def orphans_parent(self) -> int:
        """The pid a descendant re-parents to when its parent dies: the
        namespace's init, or else the supervisor (a subreaper)."""
        assert self.supervisor is not None, "a forked process's orphans are its own"
        return self.namespace_init or self.supervisor.pid

    # -- starting -----------------------------------------------------------------

    @classmethod
    def start(
        cls,
        argv: Sequence[str],
        *,
        cwd: str | os.PathLike[str],
        env: Mapping[str, str],
        stdin_path: Stdio | None,
        stdout_path: Stdio,
        stderr_path: Stdio,
        pass_fds: Sequence[int] = (),
        cgroup: bool | None = None,
        pidns: bool | None = None,
        forward: Mapping[int, str] | None = None,
    ) -> ContainedProcess:
        """Exec `argv` under a fresh supervisor, stdin from a file (None:
        /dev/null) or an fd, stdout and stderr to files or fds (the
        supervisor's own errors go to stderr too; it keeps no copy of the
        child's stdin and stdout, so their pipes see EOF when the child and
        its helpers are gone).  The agent leads a session of its own.  With
        `cgroup` (None: when FAULTLAB_CGROUP=1 and the freezer hierarchy is
        writable) the tree also gets a freezer cgroup: its member list
        replaces scans of all of /proc.  With `pidns` (None: unless
        FAULTLAB_PIDNS=0) the tree gets a PID namespace of its own where the
        kernel allows one (root): the kernel then kills it whole, and
        `namespaced` says whether it got one.  With `forward` ({port: unix
        socket path}) the tree also gets a network namespace with loopback
        only, unless FAULTLAB_NETNS=0 or the kernel refuses: 127.0.0.1:port
        inside is relayed to the lab's Unix socket at path, and nothing else
        is reachable; `networked` says whether it got one (if not, the agent
        shares the lab's network)."""
        if not sys.platform.startswith("linux"):
            raise LabUsageError("containing a process tree needs Linux (a subreaper)")
        if not argv:
            raise LabUsageError("the agent command is empty")
        _refuse_while_stopping()
        if cgroup is None:
            # Opt-in (FAULTLAB_CGROUP=1): on this sandbox a cgroup per case kept
            # its init's cgroup reaper busy (docs/decisions.md); the subreaper
            # alone finds every process, with /proc scans.
            cgroup = os.environ.get("FAULTLAB_CGROUP") == "1" and os.access(FREEZER, os.W_OK)
        if pidns is None:
            pidns = pidns_wanted()
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
                stdin = _opened(files, os.devnull if stdin_path is None else stdin_path, "rb")
                stdout = _opened(files, stdout_path, "wb")
                stderr = (
                    stdout if stderr_path == stdout_path else _opened(files, stderr_path, "wb")
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
        proc = cls(0, supervisor, StatusPipe(control_w, status_r))
        join(proc)
        try:
            first = proc._line(_START_WITHIN)
        except BaseException:
            proc.close()
            raise
        if first is None or not first.startswith("pid "):
            proc.close()
            reason = first[len("error ") :] if first else "the supervisor did not start"
            if not first and not isinstance(stderr_path, int):  # its own error is there
                tail = read_tail(stderr_path, limit=4096).decode("utf-8", "replace")
                reason += f": {tail.strip().splitlines()[-1]}" if tail.strip() else ""
            raise LabUsageError(reason)
        fields = first.split()
        proc.pid = int(fields[1])
        if "pidns" in fields:
            proc.namespace_init = int(fields[fields.index("pidns") + 1])
        proc.networked = "netns" in fields
        return proc

    @classmethod
    def fork(
        cls, server: ForkServer, argv: Sequence[str], *, env: Mapping[str, str],
        fds: Sequence[int], cwd: str | None = None, after: int | None = None,
        traced: bool = False, script: str | None = None, timeout: float = 30.0,
    ) -> ContainedProcess:  # fmt: skip
        """Have `server` fork a child running `argv` (its module's arguments)
        with `fds` (in the server's order: its FD_ORDER), `env` and `cwd`;
        given `after` (a pidfd), the child runs once that process is gone;
        `traced`, once a tracer holds it (tracefork.py); `script`: it runs
        that script instead of the server's program.  ForkServerError if
        the server cannot."""
        _refuse_while_stopping()
        pid, exited = server.request(argv, env=env, fds=fds, cwd=cwd, after=after,
                                     traced=traced, script=script, timeout=timeout)  # fmt: skip
        proc = cls(pid, _exit=exited)
        join(proc)
        return proc

    # -- its status ------------------------------------------------------------------

    def _line(self, timeout: float) -> str | None:
        """The supervisor's next report line within `timeout`."""
        assert self._reports is not None
        with self._lock:
            return self._reports.next_line(timeout)

    def _read_until(self, wanted: str, timeout: float) -> bool:
        assert self._reports is not None
        with self._lock:
            found = self._reports.read_until(wanted, timeout)
            if self._reports.code is not None:
                self.returncode = self._reports.code
        return found

    def poll(self) -> int | None:
        """Its status if it has exited (negative: killed by that signal), else None."""
        return self.wait(0.0)

    def wait(self, timeout: float) -> int | None:
        """Its status (negative: killed by that signal), or None if it did
        not exit within `timeout` seconds."""
        if self.returncode is not None:
            return self.returncode
        if self._exit is not None:
            if not self._exit.done() and timeout <= 0:
                return None  # a poll: no exception to raise and catch
            try:
                self.returncode = self._exit.result(timeout)
            except TimeoutError:
                return None
            return self.returncode
        self._read_until("exit ", timeout)
        return self.returncode

    def _exited(self) -> bool:
        """Whether its exit is known, without reading anything (any thread)."""
        return self.returncode is not None or (self._exit is not None and self._exit.done())

    def descendants(self) -> list[psutil.Process]:
        """Every live process of the tree (the child, its helpers, orphans)."""
        try:
            if self.supervisor is None:
                root = psutil.Process(self.pid)
                found = [root, *root.children(recursive=True)]
            else:
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

    # -- signals and kills ------------------------------------------------------------

    def signal(self, signum: int) -> None:
        """Send `signum` to its process group (it leads a session of its own)."""
        signal_group(self.pid, signum)

    def kill(self) -> None:
        """SIGKILL its process group, unless it is known to have exited (the
        case's kill; what left the group goes with `kill_tree` or `close`)."""
        if not self._exited():
            self.signal(signal.SIGKILL)

    def kill_agent(self, timeout: float = _KILLED_WITHIN) -> int | None:
        """SIGKILL only its own process group (freeze, then kill); exec'd,
        helpers it put in other groups or sessions live on (a forked child's
        helpers die with it: they are in its PID namespace, or killed by its
        server once it exited).  Returns its status."""
        if self.supervisor is None:
            self.kill()
            return self.wait(timeout)
        assert self._reports is not None
        if not self._reports.done:
            self._reports.command(b"A")
            if not self._read_until("agent-killed", timeout):
                raise TreeError(f"the supervisor did not kill the agent within {timeout:g}s")
        return self.returncode

    def kill_tree(self, timeout: float = _KILLED_WITHIN) -> int | None:
        """SIGKILL it and every descendant, and wait until its reaper has
        reaped them all.  Returns its status."""
        if self.supervisor is None:
            self.kill()
            if self.wait(timeout) is None:
                raise TreeError(f"the forked child {self.pid} was not reaped within {timeout:g}s")
            return self.returncode
        assert self._reports is not None
        if self.supervisor.returncode is None:
            self._reports.command(b"T")
            self._read_until("done", timeout)
            try:
                self.supervisor.wait(timeout)
            except subprocess.TimeoutExpired:
                self._kill_from_lab()
                raise TreeError(f"the supervisor did not finish within {timeout:g}s") from None
            if self.problems:
                raise TreeError("; ".join(self.problems))
        return self.returncode

    def kill_others(self, keep: int, stragglers: list[str]) -> bool:
        """Kill every process of the tree but `keep`, naming each in
        `stragglers`; True if there was one."""
        left = [p for p in self.descendants() if p.pid != keep]
        for proc in left:
            with contextlib.suppress(psutil.Error):
                stragglers.append(f"{proc.name()}[{proc.pid}]")
                proc.kill()
        return bool(left)

    def sweep(self, stragglers: list[str]) -> None:
        """Kill what is left of its tree once it exited (daemons in sessions
        and groups of their own included), naming it in `stragglers`, and
        close it."""
        try:
            if self.supervisor is None:
                sweep_group(self.pid, stragglers)
            else:
                for proc in self.descendants():
                    with contextlib.suppress(psutil.Error):
                        stragglers.append(f"{proc.name()}[{proc.pid}]")
            self.kill_tree()
        except TreeError as exc:
            stragglers.append(f"(its reaper failed: {exc})")
        finally:
            self.close()

    def stop(self, timeout: float = _KILLED_WITHIN) -> None:
        """Kill the whole tree and wait (bounded) until it is gone, without
        reading its supervisor's reports (another thread may be reading
        them): what an interrupt does, from any thread."""
        if self.supervisor is None:
            self.kill()
            assert self._exit is not None
            with contextlib.suppress(TimeoutError):
                self._exit.result(timeout)
            return
        assert self._reports is not None
        self._reports.command(b"T")
        try:
            self.supervisor.wait(timeout)
        except subprocess.TimeoutExpired:
            self._kill_from_lab()

    def close(self) -> None:
        """Kill whatever is left of the tree, wait until it is reaped, and
        let go of it (its supervisor's pipes, the registry)."""
        if self._closed:
            return
        try:
            with contextlib.suppress(TreeError):
                self.kill_tree()
        finally:
            if self.supervisor is not None and self._reports is not None:
                if self.supervisor.returncode is None:  # it failed: the lab cleans up
                    self._kill_from_lab()
                self._reports.close()
            self._closed = True
            leave(self)

    def _kill_from_lab(self) -> None:
        """The fallback when the supervisor fails: freeze and kill its tree from
        here (psutil), then the supervisor itself."""
        assert self.supervisor is not None
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


def _refuse_while_stopping() -> None:
    if stopping():
        raise ChildHung("the lab is stopping (interrupted): no new child starts")


def _opened(files: contextlib.ExitStack, where: Stdio, mode: str) -> int | IO[bytes]:
    """An fd as it is, or the file at a path opened for the child."""
    if isinstance(where, int):
        return where
    return files.enter_context(open(where, mode))


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
