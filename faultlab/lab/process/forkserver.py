# The lab's side of every fork server (faultlab/forking/serve.py: the
# runtime's, the ACP agent's, the app children's): starts a server (by exec,
# so the lab never imports what it runs), sends it requests with the
# child's fds, and routes the server's answers (spawned, exited) to the
# waiting threads.  A forked child is a real process in a session of its
# own, contained by its server (a PID namespace where allowed); the lab
# holds it as a `ContainedProcess` (tree.py), which is given the child's
# pid and the future of its exit status that `request` returns: the server
# is its one reaper and reports the status here.  One registry of the
# servers a lab process started (`shared_server`), closed at exit.
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
from collections.abc import Hashable, Mapping, Sequence
from concurrent.futures import Future
from typing import Any

import orjson
import psutil

from faultlab.lab.process.environment import trimmed_environment

__all__ = [
    "RUNTIME_SERVER",
    "ForkServer",
    "ForkServerError",
    "pidns_wanted",
    "shared_server",
    "shared_servers",
]

RUNTIME_SERVER = "faultlab.runtime.forkserver"  # the reference runtime's server


class ForkServerError(RuntimeError):
    """The fork server could not start or spawn a child."""


def pidns_wanted() -> bool:
    """Whether contained processes get PID namespaces where the kernel allows
    (unless FAULTLAB_PIDNS=0), exec'd or forked."""
    return os.environ.get("FAULTLAB_PIDNS") != "0"


class ForkServer:
    """One fork server process and the connection to it."""

    def __init__(
        self, module: str = RUNTIME_SERVER, *, what: str = "the fork server",
        python: str = sys.executable, ahead: int | None = None, warm: bool = True,
        arguments: Sequence[str] = (), env: Mapping[str, str] | None = None,
        cwd: str | None = None, pidns: bool | None = None,
    ) -> None:  # fmt: skip
        """Start `python -m module`; it keeps `ahead` children forked ahead of
        the requests (None: its default, 2; 0: it forks when asked), which
        warm up while they wait if `warm` (docs/fork-server.md), each in a
        PID namespace of its own where allowed if `pidns` (None:
        `pidns_wanted()`).  `arguments` are the module's own; `env`
        (default: the trimmed environment every child is given) and `cwd`
        are the server's.  `what` names it in errors."""
        if ahead is not None and (type(ahead) is not int or ahead < 0):
            raise ValueError(f"ahead must be an integer >= 0, not {ahead!r}")
        if type(warm) is not bool:
            raise ValueError(f"warm must be True or False, not {warm!r}")
        self.module, self.what, self.warm = module, what, warm
        self.pidns = pidns_wanted() if pidns is None else pidns
        lab_end, server_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        # "cold" and "flat" are faultlab.forking.serve's COLD and FLAT.
        flags = ([] if ahead is None else [str(ahead)]) + ([] if warm else ["cold"])
        flags += [] if self.pidns else ["flat"]
        extra = ["--", *arguments] if arguments else []
        try:
            self._process = subprocess.Popen(
                # -P: the working directory is not on its path, so nothing
                # there shadows what it imports (docs/security.md).
                [python, "-P", "-m", module, str(server_end.fileno()), *flags, *extra],
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
        self._pending: dict[int, Future[Any]] = {}
        self._children: dict[int, Future[int]] = {}
        self._early_exits: dict[int, int] = {}
        self._closed = False
        self._reader = threading.Thread(target=self._read, name="faultlab-forkserver", daemon=True)
        self._reader.start()

    @property
    def pid(self) -> int:
        """The server's pid: every child it forks is its child."""
        return self._process.pid

    @property
    def closed(self) -> bool:
        return self._closed

    def request(
        self, argv: Sequence[str], *, env: Mapping[str, str], fds: Sequence[int],
        cwd: str | None = None, after: int | None = None, traced: bool = False,
        script: str | None = None, timeout: float = 30.0,
    ) -> tuple[int, Future[int]]:  # fmt: skip
        """Ask the server for a child running `argv` with `fds` (in the order the
        server expects); once forked, its pid and the future of its exit
        status (negative: killed by that signal).  Given `after` (a pidfd),
        the child waits until that process has exited before it runs;
        `traced`, it waits for a tracer before it runs (tracefork.py);
        `script`, it runs that Python script as `__main__` (a zoo variant)
        instead of the server's program."""
        request_id = next(self._ids)
        answer: Future[Any] = Future()
        message: dict[str, Any] = {
            "id": request_id, "argv": list(argv), "env": dict(env), "cwd": cwd
        }  # fmt: skip
        if traced:
            message["traced"] = True
        if script is not None:
            message["script"] = script
        if after is not None:
            message["after"] = True
            fds = [*fds, after]
        with self._lock:
            if self._closed:
                raise ForkServerError(f"{self.what} is closed")
            self._pending[request_id] = answer
            try:
                socket.send_fds(self._sock, [orjson.dumps(message)], list(fds))
            except OSError as exc:
                del self._pending[request_id]
                raise ForkServerError(f"{self.what} is gone: {exc}") from None
        try:
            reply = answer.result(timeout)
        except TimeoutError:
            raise ForkServerError(f"{self.what} did not answer within {timeout:g}s") from None
        if isinstance(reply, dict):
            raise ForkServerError(f"{self.what} could not fork: {reply.get('error')}")
        pid, exited = reply
        return int(pid), exited

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
                    pid = message["pid"]
                    exited: Future[int] = Future()
                    self._children[pid] = exited
                    early = self._early_exits.pop(pid, None)
                    if early is not None:
                        exited.set_result(early)
                    # Hand over the future itself: its exit may be reported
                    # (and it may leave _children) before the spawner wakes up.
                    self._pending.pop(message["spawned"]).set_result((pid, exited))
                elif "failed" in message:
                    self._pending.pop(message["failed"]).set_result(message)
                elif "exited" in message:
                    child = self._children.pop(message["exited"], None)
                    if child is None:
                        self._early_exits[message["exited"]] = message["status"]
                    else:
                        child.set_result(message["status"])

    def _server_gone(self) -> None:
        with self._lock:
            self._closed = True
            for answer in self._pending.values():
                answer.set_result({"error": f"{self.what} exited"})
            self._pending.clear()
            # Children of a dead server were reparented and will be reaped by
            # init; they are gone or going (their probe pipes tell them).
            for pid, exited in self._children.items():
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pid, signal.SIGKILL)
                exited.set_result(-signal.SIGKILL)
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


_shared: dict[Hashable, ForkServer] = {}
_shared_lock = threading.Lock()


def shared_server(
    module: str = RUNTIME_SERVER, *, ahead: int | None = None, warm: bool = True,
    arguments: Sequence[str] = (), env: Mapping[str, str] | None = None,
    cwd: str | None = None, what: str = "the fork server", key: Hashable = None,
    pidns: bool | None = None,
) -> ForkServer:  # fmt: skip
    """This process's fork server of `module` with these settings (`key`,
    when given, in place of `arguments`, `env` and `cwd`: what decides which
    requests a server may share; `pidns`: as ForkServer's), started on first
    use and closed at exit."""
    pidns = pidns_wanted() if pidns is None else pidns
    shared_by = key
    if shared_by is None:
        shared_by = (tuple(arguments), cwd, tuple(sorted((env or {}).items())))
    wanted = (module, ahead, warm, pidns, shared_by)
    with _shared_lock:
        server = _shared.get(wanted)
        if server is None or server.closed:
            server = _shared[wanted] = ForkServer(
                module, what=what, ahead=ahead, warm=warm, arguments=arguments, env=env,
                cwd=cwd, pidns=pidns,
            )  # fmt: skip
            atexit.register(server.close)
        return server


def shared_servers() -> list[ForkServer]:
    """Every fork server this process has started and not closed."""
    with _shared_lock:
        return [server for server in _shared.values() if not server.closed]
