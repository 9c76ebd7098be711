# The fork server: a single-threaded process that has imported the runtime
# and forks one real child per request, so a crash case costs a fork instead
# of an interpreter start.  It owns its children's whole life on this side:
# the fork, the new process group (setsid), the fds a child keeps (its
# probe pipes and its stderr file, nothing else), and reaping: it is the one
# reaper of its children and reports each exit status to the lab.
#
# Protocol (a SOCK_SEQPACKET unix socket inherited as fd N, one JSON message
# per packet, fds passed with SCM_RIGHTS):
#   lab -> server  {"id": K, "argv": [...], "env": {...}, "cwd": str|null,
#                   "fds": {"report": i, "reply": j, "stderr": k}}  + 3 fds
#   server -> lab  {"spawned": K, "pid": P}  or  {"failed": K, "error": str}
#   server -> lab  {"exited": P, "status": S}  (S: exit code, or -signal)
# When the lab's end closes, the server exits; its children leave on their
# own when their probe pipes close.
from __future__ import annotations

import gc
import os
import selectors
import signal
import socket
import sys
import traceback
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import orjson

from faultlab.runtime import __main__ as entry
from faultlab.scenario import Scenario, ScenarioError, load_scenario

__all__ = ["ForkChild", "enter_child", "fork_running", "serve", "serve_requests"]

_MAX_MESSAGE = 1 << 20
_FD_ORDER = ("report", "reply", "stderr")


class _Scenarios:
    """Parsed scenarios, reused while the file is unchanged."""

    def __init__(self) -> None:
        self._cache: dict[str, tuple[tuple[int, int], Scenario]] = {}

    def get(self, path: str) -> Scenario | None:
        try:
            stat = os.stat(path)
        except OSError:
            return None
        key = (stat.st_mtime_ns, stat.st_size)
        cached = self._cache.get(path)
        if cached is not None and cached[0] == key:
            return cached[1]
        try:
            scenario = load_scenario(path)
        except ScenarioError:
            return None  # the child loads it again and reports the error itself
        self._cache[path] = (key, scenario)
        return scenario


def enter_child(
    request: dict[str, Any], *, stdio: tuple[int, int, int], probe: tuple[int, int],
    close: set[int], program: str,
) -> None:  # fmt: skip
    """In a freshly forked child: become a process group, take `stdio` as fds
    0-2, close every other fd of `close` but the probe pipes, and take the
    request's environment, working directory and argv."""
    os.setsid()
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    for target, fd in enumerate(stdio):
        os.dup2(fd, target)
    for fd in close:
        if fd > 2 and fd not in probe:
            os.close(fd)
    os.environ.clear()
    os.environ.update(request["env"])
    os.environ["FAULTLAB_PROBE_FDS"] = f"{probe[0]},{probe[1]}"
    if request.get("cwd"):
        os.chdir(request["cwd"])
    sys.argv = [program, *request["argv"]]


def _child(
    request: dict[str, Any], fds: list[int], keep: set[int], *, scenario: Scenario | None
) -> int:
    """Runs in the forked child: the runtime with its probe pipes and stderr."""
    named = dict(zip(_FD_ORDER, fds, strict=True))
    null = os.open(os.devnull, os.O_RDONLY)
    enter_child(
        request, stdio=(null, named["stderr"], named["stderr"]),
        probe=(named["report"], named["reply"]), close=keep | set(fds) | {null},
        program="faultlab.runtime",
    )  # fmt: skip
    return entry.main(request["argv"], scenario=scenario)


ForkChild = Callable[[dict[str, Any], list[int], set[int]], int]


def fork_running(child: ForkChild, request: dict[str, Any], fds: list[int], keep: set[int]) -> int:
    """Fork; the child runs `child(request, fds, keep)` and leaves with its exit
    code, never returning here; the parent closes the fds it handed over."""
    pid = os.fork()
    if pid == 0:
        code = 3
        try:
            code = child(request, fds, keep)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 2
        except BaseException:
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    for fd in fds:
        os.close(fd)
    return pid


def _send(sock: socket.socket, message: dict[str, Any]) -> bool:
    try:
        sock.send(orjson.dumps(message))
    except OSError:
        return False
    return True


def serve_requests(fd: int, fd_order: Sequence[str], fork: ForkChild) -> None:
    """The server loop on the lab's socket `fd`: each request brings
    `len(fd_order)` fds and is answered with the pid `fork` returns; exits are
    reaped and reported; returns when the lab goes away."""
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
    while True:
        for key, _mask in selector.select():
            if key.data == "child":
                while True:
                    try:
                        if not os.read(wake_r, 4096):
                            break
                    except BlockingIOError:
                        break
                _reap(sock)
                continue
            try:
                data, fds, _flags, _addr = socket.recv_fds(sock, _MAX_MESSAGE, len(fd_order))
            except OSError:
                data, fds = b"", []
            if not data:
                return  # the lab went away
            request = orjson.loads(data)
            if len(fds) != len(fd_order):
                for received in fds:
                    os.close(received)
                _send(sock, {"failed": request.get("id"), "error": f"expected {len(fd_order)} fds"})
                continue
            try:
                pid = fork(request, fds, keep)
            except OSError as exc:
                _send(sock, {"failed": request.get("id"), "error": str(exc)})
                continue
            _send(sock, {"spawned": request["id"], "pid": pid})
            _reap(sock)


def serve(fd: int) -> None:
    entry.warm_up()
    # Objects that exist now live as long as the server: keep the collector
    # off them, so children do not copy their pages just to scan them.
    gc.freeze()
    scenarios = _Scenarios()

    def fork(request: dict[str, Any], fds: list[int], keep: set[int]) -> int:
        argv = request["argv"]
        scenario = scenarios.get(argv[0]) if argv else None
        return fork_running(partial(_child, scenario=scenario), request, fds, keep)

    serve_requests(fd, _FD_ORDER, fork)


def _reap(sock: socket.socket) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        _send(sock, {"exited": pid, "status": os.waitstatus_to_exitcode(status)})


if __name__ == "__main__":
    serve(int(sys.argv[1]))
