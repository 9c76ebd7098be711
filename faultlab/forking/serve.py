# The loop every fork server runs (the runtime's, faultlab/runtime/forkserver.py;
# the ACP agent's, faultlab/runtime/acp/forkserver.py; the app children's,
# faultlab/lab/apps/forkserver.py): a single-threaded process that has
# imported what its children run forks one real child per request, so a
# case costs a fork instead of an interpreter start.  It owns its children's
# whole life on this side: the fork (contained, contain.py), the new session
# (setsid), the fds a child keeps (the request's, nothing of the server's),
# and reaping: it is the one reaper of its children and reports each exit
# status to the lab, once what the child left is gone.
#
# It forks ahead: `ahead` children are kept forked, each in its own session
# and parked on a private socket before the requests come, so that the fork
# (the biggest fixed cost of a case, about 2 ms here) is paid while the
# previous child runs instead of while the lab waits.  A request is handed to
# the oldest waiting child with its fds; it takes the request's argv,
# environment, cwd and fds exactly as a child forked on the spot would, and
# the server forks a replacement.  A waiting child that has not been handed a
# request is never reported to the lab, and leaves when the server closes its
# socket.
#
# Protocol (a SOCK_SEQPACKET unix socket inherited as fd N, one JSON message
# per packet, fds passed with SCM_RIGHTS):
#   argv           python -m MODULE N [AHEAD] [cold] [flat] [-- EXTRA...]
#                  (AHEAD: children kept forked ahead; cold: they do not warm
#                  up while they wait; flat: no PID namespace per child;
#                  EXTRA: the server module's own arguments)
#   lab -> server  {"id": K, "argv": [...], "env": {...}, "cwd": str|null,
#                   "after": true, "traced": true, "script": PATH (each
#                   optional)}  + the server's fds (its FD_ORDER), and with
#                   "after", a pidfd: the child waits for that process to be
#                   gone before it runs; with "traced", once it took its
#                   request, it waits for the lab to attach strace and let
#                   it go (child.wait_for_tracer); with "script", the child
#                   runs that Python script as `__main__` instead of the
#                   server's program (script.run_script; the runtime's and
#                   the ACP agent's servers)
#   server -> lab  {"spawned": K, "pid": P}  or  {"failed": K, "error": str}
#   server -> lab  {"exited": P, "status": S}  (S: exit code, or -signal)
# When the lab's end closes, the server closes the waiting children's
# sockets and reaps them, kills the children it handed out (and with them
# whatever they started), and exits.
from __future__ import annotations

import contextlib
import os
import selectors
import signal
import socket
import sys
import time
import traceback
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from faultlab.forking.child import ForkChild, detach
from faultlab.forking.contain import Nursery
from faultlab.forking.procscan import _reaped
from faultlab.probe import process_gone

__all__ = ["AHEAD", "COLD", "FLAT", "ServerArguments", "serve_requests", "server_arguments"]

_MAX_MESSAGE = 1 << 20
# Children kept forked ahead by default: one per lab worker that may ask at
# the same moment (0: fork on request).
AHEAD = 2
# The server argument that keeps the children forked ahead from warming up.
COLD = "cold"
# The server argument that forks children without a PID namespace each.
FLAT = "flat"
_KILLED_WITHIN = 5.0  # seconds a child killed at the server's end may take to go


@dataclass(frozen=True, slots=True)
class ServerArguments:
    """`python -m MODULE FD [AHEAD] [cold] [flat] [-- EXTRA...]`, parsed."""

    fd: int  # the lab's socket
    ahead: int  # children kept forked ahead
    warm: bool  # they warm up while they wait (not with `cold`)
    pidns: bool  # each child in a PID namespace of its own, where allowed (not `flat`)
    extra: tuple[str, ...]  # the server module's own arguments


def server_arguments(argv: Sequence[str]) -> ServerArguments:
    """Parse a server's command line (after `-m MODULE`); ValueError if bad."""
    args = list(argv)
    extra: list[str] = []
    if "--" in args:
        extra = args[args.index("--") + 1 :]
        args = args[: args.index("--")]
    if not args:
        raise ValueError("expected FD [AHEAD] [cold] [flat] [-- EXTRA...], not nothing")
    fd, *rest = args
    flags = {flag for flag in (COLD, FLAT) if flag in rest}
    rest = [arg for arg in rest if arg not in flags]
    if len(rest) > 1 or not fd.isdigit() or (rest and not rest[0].isdigit()):
        raise ValueError(f"expected FD [AHEAD] [{COLD}] [{FLAT}] [-- EXTRA...], "
                         f"not {' '.join(argv)}")  # fmt: skip
    ahead = int(rest[0]) if rest else AHEAD
    return ServerArguments(int(fd), ahead, COLD not in flags, FLAT not in flags, tuple(extra))


class _Waiting:
    """A child forked ahead, parked on its end of a private socket until the
    server hands it a request (and `fd_count` fds) or closes the socket."""

    def __init__(
        self, nursery: Nursery, child: ForkChild, fd_count: int, keep: set[int],
        prepare: Callable[[], None] | None,
    ) -> None:  # fmt: skip
        server_end, child_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            pid = nursery.fork()
        except BaseException:
            server_end.close()
            child_end.close()
            raise
        if pid == 0:  # never returns
            server_end.close()
            _run_child(child, child_end, fd_count, keep, prepare)
        child_end.close()
        self.pid = pid
        self.sock = server_end

    def hand_over(self, data: bytes, fds: list[int]) -> bool:
        """Give the child its request and fds; False if it is gone."""
        try:
            socket.send_fds(self.sock, [data], fds)
        except OSError:
            return False
        finally:
            self.sock.close()
        return True

    def dismiss(self) -> None:
        """Close its socket: an idle child then leaves with status 0."""
        self.sock.close()


class _Pool:
    """The children forked ahead, oldest first.  Each new one closes, first
    thing, the server's ends of the others' sockets: a child that kept one
    open would keep its sibling from ever seeing EOF when dismissed."""

    def __init__(
        self, nursery: Nursery, child: ForkChild, fd_count: int, keep: set[int], size: int,
        prepare: Callable[[], None] | None,
    ) -> None:  # fmt: skip
        self._nursery = nursery
        self._child = child
        self._prepare = prepare
        self._fd_count = fd_count
        self._keep = keep
        self._size = size
        self._waiting: deque[_Waiting] = deque()

    @property
    def pids(self) -> set[int]:
        return {waiting.pid for waiting in self._waiting}

    def fork(self) -> _Waiting | None:
        """A new child forked now (not pooled), or None when fork fails."""
        others = {waiting.sock.fileno() for waiting in self._waiting}
        try:
            return _Waiting(self._nursery, self._child, self._fd_count, self._keep | others,
                            self._prepare)  # fmt: skip
        except OSError:
            return None  # out of processes for now: fork again on the next request

    def fill(self) -> None:
        while len(self._waiting) < self._size:
            waiting = self.fork()
            if waiting is None:
                return
            self._waiting.append(waiting)

    def hand_over(self, data: bytes, fds: list[int]) -> tuple[int | None, str]:
        """Hand the request to the oldest waiting child (one that died while
        waiting is skipped), or to one forked now: (pid, "") or (None, why)."""
        while self._waiting:
            waiting = self._waiting.popleft()
            if waiting.hand_over(data, fds):
                return waiting.pid, ""
        fresh = self.fork()
        if fresh is None:
            return None, "cannot fork"
        if fresh.hand_over(data, fds):
            return fresh.pid, ""
        return None, "the forked child died before it was handed its request"

    def close(self) -> None:
        """Dismiss every waiting child and reap it (bounded)."""
        pids = []
        while self._waiting:
            waiting = self._waiting.popleft()
            waiting.dismiss()
            pids.append(waiting.pid)
        for pid in pids:
            _wait_gone(pid)


def _run_child(
    child: ForkChild, sock: socket.socket, fd_count: int, keep: set[int],
    prepare: Callable[[], None] | None,
) -> None:  # fmt: skip
    """The body of a child forked ahead: prepare, wait for the request, run
    it, and leave with its exit code (never returns)."""
    code = 3
    try:
        detach()
        if prepare is not None:
            prepare()
        data, fds, _flags, _addr = socket.recv_fds(sock, _MAX_MESSAGE, fd_count + 1)
        sock.close()
        if not data:
            code = 0  # dismissed, never handed a request
        else:
            request = orjson.loads(data)
            if request.get("after"):
                # The crash child the lab let go: the kernel may still be
                # tearing it down, and it holds the session's writer lock
                # until it is gone.
                pidfd = fds.pop()
                process_gone(pidfd, None)
                os.close(pidfd)
            code = child(request, fds, keep)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 2
    except BaseException:
        traceback.print_exc()
    finally:
        # Nothing may keep this child from leaving here: it must never run
        # on into the server's loop (a flush can fail once fds are closed).
        with contextlib.suppress(BaseException):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def _send(sock: socket.socket, message: dict[str, Any]) -> bool:
    try:
        sock.send(orjson.dumps(message))
    except OSError:
        return False
    return True


def serve_requests(
    arguments: ServerArguments, fd_order: Sequence[str], child: ForkChild, *,
    prepare: Callable[[], None] | None = None,
    after_hand_over: Callable[[dict[str, Any]], None] | None = None,
    refusal: str | None = None,
) -> None:  # fmt: skip
    """The server loop on the lab's socket: each request brings
    `len(fd_order)` fds and is handed to one of the children forked ahead
    (or to one forked on the spot if there is none), which runs
    `child(request, fds, keep)`; the lab gets its pid, and later its exit
    status (the server reaps).  `prepare()` runs in each child forked ahead
    while it waits.  `after_hand_over(request)` runs in the server before
    the next child is forked (to prepare what it should inherit).  With
    `refusal`, every request is refused with that error.  Returns when the
    lab goes away, after dismissing the children still waiting and killing
    the ones handed out."""
    sock = socket.socket(fileno=arguments.fd)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda _signum, _frame: None)
    selector = selectors.DefaultSelector()
    selector.register(sock, selectors.EVENT_READ, "lab")
    selector.register(wake_r, selectors.EVENT_READ, "child")
    nursery = Nursery(pidns=arguments.pidns)
    keep = {arguments.fd, wake_r, wake_w, selector.fileno(), *nursery.fds}  # children close these
    handed: set[int] = set()  # pids the lab knows about: only their exits are reported
    ahead = 0 if refusal else arguments.ahead
    pool = _Pool(nursery, child, len(fd_order), keep, ahead, prepare)
    pool.fill()
    try:
        while True:
            for key, _mask in selector.select():
                if key.data == "child":
                    _drain(wake_r)
                    _reap(sock, handed, pool, nursery)
                    continue
                try:
                    data, fds, _flags, _addr = socket.recv_fds(
                        sock, _MAX_MESSAGE, len(fd_order) + 1
                    )
                except OSError:
                    data, fds = b"", []
                if not data:
                    return  # the lab went away
                request = orjson.loads(data)
                expected = len(fd_order) + (1 if request.get("after") else 0)
                if len(fds) != expected or refusal:
                    for received in fds:
                        os.close(received)
                    _send(sock, {"failed": request.get("id"),
                                 "error": refusal or f"expected {expected} fds"})  # fmt: skip
                    continue
                pid, error = pool.hand_over(data, fds)
                for handed_fd in fds:
                    os.close(handed_fd)
                if pid is None:
                    _send(sock, {"failed": request.get("id"), "error": error})
                else:
                    handed.add(pid)
                    _send(sock, {"spawned": request["id"], "pid": pid})
                if after_hand_over is not None:
                    after_hand_over(request)
                pool.fill()
                _reap(sock, handed, pool, nursery)
    finally:
        pool.close()
        _kill_handed(handed, pool, nursery)


def _kill_handed(handed: set[int], pool: _Pool, nursery: Nursery) -> None:
    """At the end: kill the children handed out that still run (the lab is
    gone or done), and what they started, and reap them (bounded)."""
    for pid in handed:
        with contextlib.suppress(ProcessLookupError):  # unreaped: the pid is still ours
            os.killpg(pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    for pid in handed:
        _wait_gone(pid)
    if handed:
        nursery.clean_up(pool.pids, min(handed))


def _wait_gone(pid: int) -> None:
    """Reap a child that is leaving (SIGKILL after a bounded wait)."""
    deadline = time.monotonic() + _KILLED_WITHIN
    while time.monotonic() < deadline:
        try:
            done, _status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return
        if done:
            return
        time.sleep(0.005)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)


def _drain(fd: int) -> None:
    while True:
        try:
            if not os.read(fd, 4096):
                return
        except BlockingIOError:
            return


def _reap(sock: socket.socket, handed: set[int], pool: _Pool, nursery: Nursery) -> None:
    """Reap every exited child; report those the lab was given, once what
    they left is gone."""
    exits = [(pid, status) for pid, status in _reaped() if pid in handed]
    handed.difference_update(pid for pid, _status in exits)
    if not exits:
        return
    nursery.clean_up(handed | pool.pids, min(pid for pid, _status in exits))
    for pid, status in exits:
        _send(sock, {"exited": pid, "status": status})
