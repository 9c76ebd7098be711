# The lab's side of the fork server (faultlab/runtime/forkserver.py): starts
# the server (by exec, so the lab never imports the runtime), sends it spawn
# requests with the child's fds, and routes the server's answers (spawned,
# exited) to the waiting threads.  A forked child is still a real process in
# its own process group: the lab kills it with SIGKILL to the group; the
# server is its one reaper and reports the exit status here.
from __future__ import annotations

import atexit
import contextlib
import itertools
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

import orjson
import psutil

from faultlab.lab.process.environment import trimmed_environment

__all__ = ["ForkServer", "ForkServerError", "ForkedProcess", "shared_server", "shared_servers"]


class ForkServerError(RuntimeError):
    """The fork server could not start or spawn a child."""


class ForkedProcess:
    """A child forked by the server; quacks like the parts of Popen the lab uses."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self._exited = threading.Event()

    def _set_exit(self, status: int) -> None:
        self.returncode = status
        self._exited.set()

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if not self._exited.wait(timeout):
            raise subprocess.TimeoutExpired(f"forked child {self.pid}", timeout or 0)
        assert self.returncode is not None
        return self.returncode


class ForkServer:
    """One fork server process and the connection to it."""

    # The server's module (python -m MODULE FD) and what its children are.
    module = "faultlab.runtime.forkserver"
    what = "the fork server"

    def __init__(
        self, *, python: str = sys.executable, ahead: int | None = None, warm: bool = True,
        arguments: Sequence[str] = (), env: Mapping[str, str] | None = None,
        cwd: str | None = None,
    ) -> None:  # fmt: skip
        """Start the server; it keeps `ahead` children forked ahead of the
        requests (None: its default, 2; 0: it forks when asked), which warm
        up while they wait if `warm` (docs/fork-server.md).  `arguments`
        follow the socket's fd on its command line; `env` (default: the
        trimmed environment every child is given) and `cwd` are its own."""
        if ahead is not None and (type(ahead) is not int or ahead < 0):
            raise ValueError(f"ahead must be an integer >= 0, not {ahead!r}")
        if type(warm) is not bool:
            raise ValueError(f"warm must be True or False, not {warm!r}")
        lab_end, server_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.warm = warm
        # "cold" is faultlab.runtime.forkserver.COLD (the lab never imports the runtime).
        extra = ([] if ahead is None else [str(ahead)]) + ([] if warm else ["cold"])
        try:
            self._process = subprocess.Popen(
                # -P: the working directory is not on its path, so nothing
                # there shadows what it imports (docs/security.md).
                [python, "-P", "-m", self.module, str(server_end.fileno()), *arguments, *extra],
                pass_fds=(server_end.fileno(),),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                start_new_session=True,
                # What every child is given: a child then only adds its probe's.
                env=trimmed_environment() if env is None else dict(env),
                cwd=cwd,
            )
        finally:
            server_end.close()
        self._sock = lab_end
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._pending: dict[int, tuple[threading.Event, list[Any]]] = {}
        self._children: dict[int, ForkedProcess] = {}
        self._early_exits: dict[int, int] = {}
        self._closed = False
        self._reader = threading.Thread(target=self._read, name="faultlab-forkserver", daemon=True)
        self._reader.start()

    def spawn(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str],
        report_fd: int,
        reply_fd: int,
        stderr_fd: int,
        cwd: str | None = None,
        after: int | None = None,
        timeout: float = 30.0,
    ) -> ForkedProcess:
        """Fork a runtime child running `python -m faultlab.runtime *argv`;
        given `after`, a pidfd, the runtime starts once that process is gone."""
        return self.request(argv, env=env, fds=(report_fd, reply_fd, stderr_fd), cwd=cwd,
                            after=after, timeout=timeout)  # fmt: skip

    def request(
        self, argv: Sequence[str], *, env: Mapping[str, str], fds: Sequence[int],
        cwd: str | None = None, after: int | None = None, timeout: float = 30.0,
    ) -> ForkedProcess:  # fmt: skip
        """Ask the server for a child running `argv` with `fds` (in the order the
        server expects); return it once forked.  Given `after` (a pidfd), the
        child waits until that process has exited before it runs."""
        request_id = next(self._ids)
        ready = threading.Event()
        answer: list[Any] = []
        message: dict[str, Any] = {
            "id": request_id, "argv": list(argv), "env": dict(env), "cwd": cwd
        }  # fmt: skip
        if after is not None:
            message["after"] = True
            fds = [*fds, after]
        with self._lock:
            if self._closed:
                raise ForkServerError(f"{self.what} is closed")
            self._pending[request_id] = (ready, answer)
            try:
                socket.send_fds(self._sock, [orjson.dumps(message)], list(fds))
            except OSError as exc:
                del self._pending[request_id]
                raise ForkServerError(f"{self.what} is gone: {exc}") from None
        if not ready.wait(timeout):
            raise ForkServerError(f"{self.what} did not answer within {timeout:g}s")
        reply = answer[0]
        if not isinstance(reply, ForkedProcess):
            raise ForkServerError(f"{self.what} could not fork: {reply.get('error')}")
        return reply

    def _read(self) -> None:
        while True:
            try:
                data = self._sock.recv(1 << 16)
            except OSError:
                data = b""
            if not data:
                self._server_gone()
                return
            message = orjson.loads(data)
            with self._lock:
                if "spawned" in message:
                    process = ForkedProcess(message["pid"])
                    self._children[process.pid] = process
                    early = self._early_exits.pop(process.pid, None)
                    if early is not None:
                        process._set_exit(early)
                    # Hand over the object itself: its exit may be reported
                    # (and it may leave _children) before the spawner wakes up.
                    ready, answer = self._pending.pop(message["spawned"])
                    answer.append(process)
                    ready.set()
                elif "failed" in message:
                    ready, answer = self._pending.pop(message["failed"])
                    answer.append(message)
                    ready.set()
                elif "exited" in message:
                    child = self._children.pop(message["exited"], None)
                    if child is None:
                        self._early_exits[message["exited"]] = message["status"]
                    else:
                        child._set_exit(message["status"])

    def _server_gone(self) -> None:
        with self._lock:
            self._closed = True
            for ready, answer in self._pending.values():
                answer.append({"error": "the fork server exited"})
                ready.set()
            self._pending.clear()
            # Children of a dead server were reparented and will be reaped by
            # init; they are gone or going (their probe pipes tell them).
            for child in self._children.values():
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(child.pid, signal.SIGKILL)
                child._set_exit(-signal.SIGKILL)
            self._children.clear()

    def cpu_seconds(self) -> float:
        """CPU time used so far by the server and by the children it has
        reaped (user + system), for the benchmarks; 0.0 once it is gone
        (reaped: its pid may already name another process)."""
        if self._process.poll() is not None:
            return 0.0
        try:
            times = psutil.Process(self._process.pid).cpu_times()
        except psutil.Error:
            return 0.0
        return float(times.user + times.system + times.children_user + times.children_system)

    def close(self) -> None:
        with self._lock:
            self._closed = True
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        self._sock.close()
        try:
            self._process.wait(10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait(10)


S = TypeVar("S", bound=ForkServer)
_shared: dict[tuple[type[ForkServer], int | None, bool], ForkServer] = {}
_shared_lock = threading.Lock()


def shared_server(
    kind: type[S] = ForkServer,  # type: ignore[assignment]
    *,
    ahead: int | None = None,
    warm: bool = True,
) -> S:
    """This process's fork server of `kind` keeping `ahead` children forked
    ahead (None: the server's default), warm or not, started on first use
    and closed at exit."""
    with _shared_lock:
        server = _shared.get((kind, ahead, warm))
        if server is None or server._closed:
            server = _shared[kind, ahead, warm] = kind(ahead=ahead, warm=warm)
            atexit.register(server.close)
        assert isinstance(server, kind)
        return server


def shared_servers() -> list[ForkServer]:
    """Every fork server this process has started and not closed."""
    with _shared_lock:
        return [server for server in _shared.values() if not server._closed]
