# The fork server: a single-threaded process that has imported the runtime
# and forks one real child per request, so a crash case costs a fork instead
# of an interpreter start.  It owns its children's whole life on this side:
# the fork, the new process group (setsid), the fds a child keeps (its
# probe pipes and its stderr file, nothing else), and reaping: it is the one
# reaper of its children and reports each exit status to the lab.
#
# It forks ahead: `AHEAD` children are kept forked, each in its own session
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
#   lab -> server  {"id": K, "argv": [...], "env": {...}, "cwd": str|null,
#                   "after": true (optional)}  + 3 fds: report, reply, stderr,
#                   and with "after", a pidfd: the child waits for that
#                   process to be gone before it runs
#   server -> lab  {"spawned": K, "pid": P}  or  {"failed": K, "error": str}
#   server -> lab  {"exited": P, "status": S}  (S: exit code, or -signal)
# When the lab's end closes, the server closes the waiting children's sockets,
# reaps them and exits; the children it handed out leave on their own when
# their probe pipes close.
from __future__ import annotations

import contextlib
import gc
import os
import selectors
import signal
import socket
import sys
import time
import traceback
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

import orjson

from faultlab.probe import process_gone
from faultlab.runtime import __main__ as entry
from faultlab.runtime.forkchild import (
    FD_ORDER,
    ForkChild,
    detach,
    remember_scenario,
    run_child,
)

__all__ = ["AHEAD", "COLD", "serve", "serve_requests", "server_arguments"]

_MAX_MESSAGE = 1 << 20
# Children kept forked ahead by default: one per lab worker that may ask at
# the same moment (0: fork on request).
AHEAD = 2
# The server argument that keeps the children forked ahead from warming up.
COLD = "cold"


class _Waiting:
    """A child forked ahead, parked on its end of a private socket until the
    server hands it a request (and `fd_count` fds) or closes the socket."""

    def __init__(
        self, child: ForkChild, fd_count: int, keep: set[int], prepare: Callable[[], None] | None
    ) -> None:
        server_end, child_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        pid = os.fork()
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
        self, child: ForkChild, fd_count: int, keep: set[int], size: int,
        prepare: Callable[[], None] | None,
    ) -> None:  # fmt: skip
        self._child = child
        self._prepare = prepare
        self._fd_count = fd_count
        self._keep = keep
        self._size = size
        self._waiting: deque[_Waiting] = deque()

    def fork(self) -> _Waiting | None:
        """A new child forked now (not pooled), or None when fork fails."""
        others = {waiting.sock.fileno() for waiting in self._waiting}
        try:
            return _Waiting(self._child, self._fd_count, self._keep | others, self._prepare)
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
            _wait_dismissed(pid)


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
    fd: int, fd_order: Sequence[str], child: ForkChild, *, ahead: int = AHEAD,
    prepare: Callable[[], None] | None = None,
    after_hand_over: Callable[[dict[str, Any]], None] | None = None,
) -> None:  # fmt: skip
    """The server loop on the lab's socket `fd`: each request brings
    `len(fd_order)` fds and is handed to one of the `ahead` children forked
    ahead (or to one forked on the spot if there is none), which runs
    `child(request, fds, keep)`; the lab gets its pid, and later its exit
    status (the server reaps).  `prepare()` runs in each child forked ahead
    while it waits (see `serve`).  `after_hand_over(request)` runs in the server
    before the next child is forked (to prepare what it should inherit).
    Returns when the lab goes away, after dismissing and reaping the
    children still waiting."""
    sock = socket.socket(fileno=fd)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda _signum, _frame: None)
    selector = selectors.DefaultSelector()
    selector.register(sock, selectors.EVENT_READ, "lab")
    selector.register(wake_r, selectors.EVENT_READ, "child")
    keep = {fd, wake_r, wake_w, selector.fileno()}  # the child closes these
    handed: set[int] = set()  # pids the lab knows about: only their exits are reported
    pool = _Pool(child, len(fd_order), keep, ahead, prepare)
    pool.fill()
    try:
        while True:
            for key, _mask in selector.select():
                if key.data == "child":
                    _drain(wake_r)
                    _reap(sock, handed)
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
                if len(fds) != expected:
                    for received in fds:
                        os.close(received)
                    _send(sock, {"failed": request.get("id"),
                                 "error": f"expected {expected} fds"})  # fmt: skip
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
                _reap(sock, handed)
    finally:
        pool.close()


def _wait_dismissed(pid: int) -> None:
    """Reap a dismissed child (it leaves at once; SIGKILL after a bounded wait)."""
    deadline = time.monotonic() + 5.0
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


def serve(fd: int, *, ahead: int = AHEAD, warm: bool = True) -> None:
    """Serve the lab on socket `fd`, keeping `ahead` children forked ahead,
    which warm up while they wait if `warm` (see below)."""
    entry.warm_up()
    # Objects that exist now live as long as the server: keep the collector
    # off them, so children do not copy their pages just to scan them.
    gc.freeze()
    # A child forked ahead runs the warm-up again while it waits: the same
    # code on the same objects as the server's, so it changes nothing, but
    # the pages every run writes to (the event loop's machinery above all)
    # are copied now rather than after the lab asked for the child: about
    # half of a run's copy-on-write faults move off the case's critical path.
    # That pays only where a core would otherwise idle: when the lab runs
    # more cases at once than there are cores, the warm-up competes with them
    # for CPU and time (the lab then asks for `warm=False`).
    serve_requests(
        fd, FD_ORDER, run_child, ahead=ahead, prepare=entry.warm_up if warm else None,
        after_hand_over=remember_scenario,
    )  # fmt: skip


def _reap(sock: socket.socket, handed: set[int]) -> None:
    """Reap every exited child; report those the lab was given."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        if pid in handed:
            handed.discard(pid)
            _send(sock, {"exited": pid, "status": os.waitstatus_to_exitcode(status)})


def server_arguments(argv: Sequence[str]) -> tuple[int, int, bool]:
    """`FD [AHEAD] [cold]` of `python -m MODULE FD [AHEAD] [cold]`: the lab's
    socket, how many children to keep forked ahead, and whether they warm up
    while they wait (not with `cold`)."""
    fd, *rest = argv
    warm = not rest or rest[-1] != COLD
    if not warm:
        rest.pop()
    if len(rest) > 1:
        raise ValueError(f"expected FD [AHEAD] [{COLD}], not {' '.join(argv)}")
    ahead = int(rest[0]) if rest else AHEAD
    if ahead < 0:
        raise ValueError(f"ahead must be >= 0, not {ahead}")
    return int(fd), ahead, warm


if __name__ == "__main__":
    socket_fd, children_ahead, warm_children = server_arguments(sys.argv[1:])
    serve(socket_fd, ahead=children_ahead, warm=warm_children)
