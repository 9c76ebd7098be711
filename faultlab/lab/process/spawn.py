# A target under the probe: the two probe pipes given to a contained process
# (a `ContainedProcess`, tree.py: the one process handle of every drive),
# with a trimmed environment, stderr to a file (a pipe could fill up and
# block it) and bounded waits everywhere.  This module owns what the probe
# adds to the process: its pipes, the trace read from them, park/continue,
# and when a child counts as done (its release, the sweep for stragglers).
# The process itself is started, signalled, killed and reaped by its handle,
# exec'd (a --target command, or the runtime under --spawn exec) under its
# per-case supervisor or forked by the runtime's fork server, contained
# either way (a PID namespace where the kernel allows one), so whatever it
# daemonizes (setsid, double fork, a group of its own, SIGTERM ignored) dies
# with the case.  Reports that break the protocol are kept apart
# (`bad_reports`), never in the trace, and a child's output file is cut to
# its head and tail (`OUTPUT_HEAD`): those checks are
# faultlab/lab/process/probereport.py; how a child ended and its group
# signal are faultlab/lab/process/childproc.py; the registry of live
# processes (`kill_all`) is faultlab/lab/process/live.py.
from __future__ import annotations

import contextlib
import math
import os
import select
import signal
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from faultlab.lab.process.childproc import ChildExit, ChildHung, signal_group, wrapped_target
from faultlab.lab.process.environment import trimmed_environment
from faultlab.lab.process.forkserver import ForkServer
from faultlab.lab.process.live import allow_children, kill_all, stop_children
from faultlab.lab.process.probereport import (
    MAX_REPORT_LINE,
    MAX_REPORTS,
    OUTPUT_HEAD,
    OUTPUT_TAIL,
    ProbeReport,
    bound_output,
    report_problem,
)
from faultlab.lab.process.tree import ContainedProcess
from faultlab.probe import ENV_ARM, ENV_FDS, RELEASED, process_gone
from faultlab.userfiles import read_tail

__all__ = [
    "MAX_REPORT_LINE",
    "OUTPUT_HEAD",
    "OUTPUT_TAIL",
    "Child",
    "ChildExit",
    "ChildHung",
    "allow_children",
    "bound_output",
    "kill_all",
    "report_problem",
    "signal_group",
    "stop_children",
    "trimmed_environment",
]

_GONE_WITHIN = 60.0  # seconds a SIGKILLed process may take to be gone
# How long the report pipe may stay open after the child itself exited
# before the lab says that a descendant holds it.
_PIPE_GRACE = 1.0
_EXIT_CHECK = 0.1  # seconds between checks that a silent child has exited
_KILLED = -int(signal.SIGKILL)  # the status of a child killed that no reaper reported


@dataclass(eq=False)
class Child:
    """One target attached to the lab through the probe pipes: a process
    handle (`process`) and what the probe adds to it."""

    argv: Sequence[str]
    stderr_path: Path
    armed: str | None = None
    env: Mapping[str, str] | None = None
    cwd: str | None = None
    trace: list[ProbeReport] = field(default_factory=list)
    parked: ProbeReport | None = None
    stragglers: list[str] = field(default_factory=list)
    # The exec'd command wraps the target (strace -f): its one child is the target.
    wrapper: bool = False
    _wrapped: int = -1  # a pidfd of the wrapped target, once found
    _unwrapped: bool = False
    # Reports that break the protocol (`report_problem`), kept out of `trace`.
    bad_reports: list[str] = field(default_factory=list)
    server: ForkServer | None = None  # fork from this server instead of exec
    server_argv: Sequence[str] = ()  # what the server's child runs: runtime arguments
    # A pidfd: the child's runtime starts only once that process is gone
    # (the crash child, let go by `kill_and_let_go`).  The caller owns it.
    after: int | None = None
    # Forked only: the child waits, before it runs, until the lab has
    # attached a tracer and lets it go (faultlab/lab/process/tracefork.py).
    traced: bool = False
    # Forked only: a Python script the child runs as `__main__` instead of
    # the runtime (a zoo variant, `Target.script`), and whether a SIGKILLed
    # child may be let go before it is reaped (`kill_and_let_go`): the
    # reference runtime's may, a script's not.
    script: str | None = None
    let_go: bool = True
    process: ContainedProcess | None = None  # once started
    # The inode of the report pipe: a system-call trace names the pipe so.
    report_inode: int = 0
    _report_fd: int = -1
    _reply_fd: int = -1
    _buffer: bytes = b""
    _exit: ChildExit | None = None
    # A forked child's last report, {"exiting": code}: it closed every fd but
    # its probe pipes and is exiting (faultlab.runtime.forkchild.release).
    _released: int | None = None
    _eof: bool = False  # the report pipe reached EOF: every writer is gone
    _settled: bool = True  # False while a child let go early is not reaped yet
    _poll: select.poll | None = None  # one per child: the trace is read in many short waits

    def start(self) -> None:
        report_r, report_w = os.pipe()
        reply_r, reply_w = os.pipe()
        probe_env = {ENV_FDS: f"{report_w},{reply_r}"}
        if self.armed:
            probe_env[ENV_ARM] = self.armed
        env = trimmed_environment({**(self.env or {}), **probe_env})
        self.stderr_path.parent.mkdir(parents=True, exist_ok=True)
        try:
            if self.server is not None:
                self.process = self._fork(env, report_w, reply_r)
            else:
                self.process = self._exec(env, report_w, reply_r)
        except BaseException:
            os.close(report_r)
            os.close(reply_w)
            raise
        finally:
            # The child's ends belong to the child alone, or EOF never comes.
            os.close(report_w)
            os.close(reply_r)
        self._report_fd = report_r
        self._reply_fd = reply_w
        self.report_inode = os.fstat(report_r).st_ino
        os.set_blocking(report_r, False)
        self._poll = select.poll()
        self._poll.register(report_r, select.POLLIN)

    def _fork(self, env: dict[str, str], report_w: int, reply_r: int) -> ContainedProcess:
        assert self.server is not None
        stderr = os.open(self.stderr_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            # The runtime's fork server takes (report, reply, stderr).
            return ContainedProcess.fork(
                self.server, self.server_argv, env=env, fds=(report_w, reply_r, stderr),
                cwd=self.cwd, after=self.after, traced=self.traced, script=self.script,
            )  # fmt: skip
        finally:
            os.close(stderr)

    def _exec(self, env: dict[str, str], report_w: int, reply_r: int) -> ContainedProcess:
        if self.after is not None and not process_gone(self.after, _GONE_WITHIN):
            raise ChildHung(f"a killed process was not gone within {_GONE_WITHIN:g}s")
        # Under its own supervisor: it leads a session of its own (so a
        # group signal reaches what it did not move away), and whatever
        # left the group is still the supervisor's to kill (`_sweep`).
        return ContainedProcess.start(
            list(self.argv), cwd=self.cwd or os.getcwd(), env=env, stdin_path=None,
            stdout_path=self.stderr_path, stderr_path=self.stderr_path,
            pass_fds=(report_w, reply_r),
        )  # fmt: skip

    def run_until_parked_or_exit(self, timeout: float) -> ProbeReport | None:
        """Read the trace until the child parks (return its message) or exits (None)."""
        deadline = time.monotonic() + timeout
        assert self._poll is not None
        exited_at: float | None = None  # when the child itself was seen to exit
        wrapped_at: float | None = None  # when a wrapper's target was seen to exit
        while True:
            now = time.monotonic()
            remaining = deadline - now
            if exited_at is None and self.process is not None and self.process.poll() is not None:
                exited_at = now
            if self.wrapper and exited_at is None and wrapped_at is None and self._exited():
                wrapped_at = now
            if wrapped_at is not None and now - wrapped_at >= _PIPE_GRACE:
                self._unwrap()  # what the target left keeps the wrapper alive: killed
            if exited_at is not None and now - exited_at >= _PIPE_GRACE:
                status = self.process.returncode if self.process else "?"
                raise ChildHung(
                    f"the target exited (status {status}) "
                    "but a descendant still holds its probe pipe open: a helper process "
                    "must close the probe fds (docs/probe-protocol.md)"
                )
            if remaining <= 0:
                raise ChildHung(f"no boundary reached and no exit within {timeout:g}s")
            wait = min(remaining, _EXIT_CHECK if exited_at is None else _PIPE_GRACE)
            if not self._poll.poll(max(1, math.ceil(wait * 1000))):
                continue
            try:
                data = os.read(self._report_fd, 1 << 16)
            except BlockingIOError:
                continue
            if not data:  # every writer closed: the child is gone
                self._eof = True
                return None
            if self._take(data):
                return self.parked

    def _take(self, data: bytes) -> bool:
        self._buffer += data
        *lines, self._buffer = self._buffer.split(b"\n")
        if len(self._buffer) > MAX_REPORT_LINE:
            self._bad(f"a report line longer than {MAX_REPORT_LINE} bytes")
            self._buffer = b""
        found = False
        for line in lines:
            if len(line) > MAX_REPORT_LINE:
                self._bad(f"a report line longer than {MAX_REPORT_LINE} bytes")
                continue
            try:
                message = orjson.loads(line)
            except orjson.JSONDecodeError:
                shown = line[:80].decode("utf-8", "replace")
                self._bad(f"a report line that is not JSON: {shown!r}")
                continue
            released = self._release_of(message)
            self._released = released
            if released is not None:
                continue  # the fork server's word, not the target's trace
            problem = report_problem(message)
            if problem is not None:
                self._bad(problem)
                continue
            if len(self.trace) >= MAX_REPORTS:
                self._bad(f"more than {MAX_REPORTS} probe reports in one run")
                continue
            report: ProbeReport = message  # report_problem checked its shape
            self.trace.append(report)
            if report.get("parked"):
                self.parked = report
                found = True
        return found

    def _exited(self) -> bool:
        """Whether a `wrapper`'s (strace's) one child, the target, has exited."""
        if self.process is None or self.process.forked:
            return False
        if self._wrapped < 0:
            self._wrapped = wrapped_target(self.process.pid)
            if self._wrapped < 0:
                return False
        ready, _, _ = select.select([self._wrapped], [], [], 0)
        return bool(ready)

    def _unwrap(self) -> bool:
        """Under a wrapper whose target exited: kill what the target left
        (a wrapper like strace -f waits for every process it follows, and
        holds the probe pipe meanwhile).  True if there was something."""
        if not self.wrapper or self._unwrapped or self.process is None or self.process.forked:
            return False
        self._unwrapped = True
        return self.process.kill_others(self.process.pid, self.stragglers)

    def _bad(self, problem: str) -> None:
        if len(self.bad_reports) < 20:  # the first few say enough
            self.bad_reports.append(problem)

    def _release_of(self, message: object) -> int | None:
        """The exit code a forked child reports in its release, else None."""
        if self.server is None or not isinstance(message, dict) or len(message) != 1:
            return None
        code = message.get(RELEASED)
        return code if type(code) is int else None

    def reply(self, action: str, **fields: Any) -> None:
        """Answer a parked child (e.g. "continue").  A child that is gone
        already (one without a SIGTERM handler, after the `sigterm` fault's
        signal) has closed its end: the answer is moot, and how it ended is
        read from its exit, so EPIPE is not the lab's error."""
        self.parked = None
        with contextlib.suppress(BrokenPipeError):
            os.write(self._reply_fd, orjson.dumps({"action": action, **fields}) + b"\n")

    def signal(self, signum: int) -> None:
        """Send a signal to the child's whole process group."""
        assert self.process is not None
        self.process.signal(signum)

    def kill(self) -> None:
        """SIGKILL the child's process group (never any group we did not create)."""
        if self.process is not None and (self._exit is None or not self._settled):
            self.process.kill()

    def kill_and_let_go(self) -> int | None:
        """SIGKILL a forked child's group and let it go at once, as `wait`
        does with `early` for a child that released itself: the lab reads
        what the child left while the kernel tears it down (2-3 ms here),
        and `settle` reaps it later.  Safe only for a child parked at a
        boundary whose writes all come from its parked thread (the
        reference runtime's): it can write nothing more once parked.

        Returns a pidfd of the child (the caller closes it), for the next
        child of the session to wait on (`after`); None, with nothing done,
        when it cannot be let go (not forked, already gone, no pidfd): then
        kill and `wait` as usual."""
        if self.process is None or not self.process.forked or self._exit is not None:
            return None
        if not self.let_go:
            return None
        try:
            # Before the kill: the pid cannot name another process while the
            # child lives, nor until the server reaps it.
            pidfd = os.pidfd_open(self.process.pid)
        except OSError:
            return None
        self.process.signal(signal.SIGKILL)
        self._settled = False
        self._exit = ChildExit(-signal.SIGKILL, "")  # `settle` reads its stderr
        self.close()
        return pidfd

    def wait(self, timeout: float, *, early: bool = False) -> ChildExit:
        """Reap the child (the one reaper), then sweep its group for stragglers.

        With `early`, a forked child whose trace ended with its release (it
        closed every fd but its probe pipes, reported its exit code, closed
        the report pipe) is not waited for: its reported code is returned at once,
        while the kernel still tears the process down.  `settle` then waits
        for the real status, which replaces the reported one."""
        assert self.process is not None
        if self._exit is not None:
            return self._exit
        if early and self._eof and self._released is not None:
            self._settled = False
            self._exit = ChildExit(self._released, self._stderr())
            self.close()
            return self._exit
        code = self.process.wait(timeout)
        if code is None:
            self.kill()
            code = self.process.wait(5)
            self._sweep()
            self._exit = ChildExit(_KILLED if code is None else code, self._stderr())
            self.close()
            raise ChildHung(f"did not exit within {timeout:g}s; killed")
        self.drain(1.0)
        self._sweep()
        self._exit = ChildExit(code, self._stderr())
        self.close()
        return self._exit

    def settle(self, timeout: float) -> ChildExit:
        """For a child `wait(early=True)` let go: reap it (the server did; the
        lab waits for its report), sweep its group, and return its status as
        the reaper saw it.  For any other child: what `wait` returned."""
        assert self.process is not None and self._exit is not None
        if self._settled:
            return self._exit
        # Complete: the child closed it before its release, or was killed
        # while parked (kill_and_let_go), before the lab read it.
        stderr = self._exit.stderr or self._stderr()
        try:
            code = self.process.wait(timeout)
            if code is None:
                self.kill()
                self.process.wait(5)
                raise ChildHung(f"did not finish exiting within {timeout:g}s; killed")
            self._sweep()
        finally:
            self._settled = True
            self.close()
        self._exit = ChildExit(code, stderr)
        return self._exit

    def drain(self, timeout: float) -> None:
        """Read what is left of the trace after the child exited."""
        if self._report_fd >= 0:
            with contextlib.suppress(ChildHung):
                while self.run_until_parked_or_exit(timeout) is not None:
                    pass

    def _sweep(self) -> None:
        """Kill and name what is left of the child's tree, and close its handle."""
        assert self.process is not None
        self.process.sweep(self.stragglers)

    def _stderr(self) -> str:
        bound_output(self.stderr_path)
        limit = OUTPUT_HEAD + OUTPUT_TAIL + 200  # what bound_output leaves
        return read_tail(self.stderr_path, limit=limit).decode("utf-8", "replace")

    def close(self) -> None:
        """Close the lab's pipe ends.  A child let go early stays live (for
        kill_all) with its reply pipe open until it is settled: that pipe's
        EOF would tell the child's probe that the lab went away, and it
        could then exit with EXIT_LAB_GONE before its own exit."""
        if self._report_fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self._report_fd)
            self._report_fd = -1
        if self._wrapped >= 0:
            with contextlib.suppress(OSError):
                os.close(self._wrapped)
            self._wrapped = -1
        self._poll = None
        if not self._settled:
            return
        if self.process is not None and self._exit is not None:
            self.process.close()  # done with it: whatever is left of its tree goes
        if self._reply_fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self._reply_fd)
            self._reply_fd = -1

    def __enter__(self) -> Child:
        if self.process is None:  # a traced child is started before its tracer
            self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._exit is None and self.process is not None:
            self.kill()
            with contextlib.suppress(ChildHung):
                self.wait(10)
        self.close()
