# The fork server of `--app` cases (`python -m faultlab.lab.apps.forkserver
# FD CHILD_MODULE APP`): a single-threaded process that has imported the
# framework and the user's module once (the child module's `preload(app)`),
# and forks one real child per request, which runs the child module's
# `main(argv)`: a case's two children then cost two forks instead of two
# interpreter starts plus the framework's import (about a second each).
#
# It lives in the lab, not beside faultlab/runtime/forkserver.py, because
# its children are the lab's app children (faultlab/lab/apps/lgchild.py and
# its siblings import lab code), and the runtime never imports the lab (nor
# the lab the runtime: pyproject [tool.importlinter]).  So it speaks that
# server's protocol (docs there; the lab's side is the same ForkServer
# class) with its own small loop: two fds per request (the child's stdout
# and stderr files), no children forked ahead (a fork of this server takes
# 2-5 ms, next to a case's hundred-odd), no probe pipes (an app child reports
# to the gate over a Unix socket named in its argv).
#
#   lab -> server  {"id": K, "argv": [...], "env": {...}, "cwd": str|null}
#                  + 2 fds: stdout, stderr
#   server -> lab  {"spawned": K, "pid": P}  or  {"failed": K, "error": str}
#   server -> lab  {"exited": P, "status": S}  (S: exit code, or -signal)
#
# A child leads a session of its own (the lab's SIGKILL of its group reaches
# it and nothing else), keeps no fd of the server's, takes the request's
# environment, cwd and argv, and leaves the way an interpreter does: its
# non-daemon threads joined, the atexit handlers run, stdio flushed.
#
# Each child is contained as an exec'd one is (faultlab/lab/process/tree.py):
# the server forks a per-case supervisor, which makes itself a child
# subreaper (PR_SET_CHILD_SUBREAPER, the same code as reaper.py's) and then
# forks the child.  Whatever the child starts, in its group or not (a setsid
# daemon, a double fork), stays the supervisor's descendant; once the child
# has exited (or the server is gone) the supervisor freezes and kills every
# descendant (reaper.freeze_kill), reaps them, and exits with the child's
# own status, which the server reports as the child's.  The lab sees the
# child's pid and kills its group at a kill point, as before.  (No PID
# namespace: the child would see itself as pid 1, which an app may notice;
# the subreaper alone finds every process.)
from __future__ import annotations

import atexit
import contextlib
import gc
import importlib
import os
import resource
import selectors
import signal
import socket
import sys
import threading
import traceback
from typing import Any

import orjson

from faultlab.lab.process import reaper, reaperkill

__all__ = ["FD_ORDER", "serve"]

FD_ORDER = ("stdout", "stderr")
_MAX_MESSAGE = 1 << 20
_MAX_FD = os.sysconf("SC_OPEN_MAX")

def _send(sock: socket.socket, message: dict[str, Any]) -> None:
    with contextlib.suppress(OSError):  # the lab went away: nobody listens
        sock.send(orjson.dumps(message))


def _take_environment(wanted: dict[str, str]) -> None:
    """Make os.environ (and the C-level environment) exactly `wanted`."""
    for key in [key for key in os.environ if key not in wanted]:
        del os.environ[key]
    for key, value in wanted.items():
        if os.environ.get(key) != value:
            os.environ[key] = value


_SUBREAPER_TICK = 0.5  # seconds between a supervisor's checks that the server lives


def _supervise(request: dict[str, Any], fds: list[int], child_module: str, report: int) -> None:
    """A per-case supervisor's whole life (forked by the server): fork the
    child, say its pid on `report`, wait for it, kill whatever it left, and
    leave with its status.  Never returns."""
    code = 1
    try:
        server = os.getppid()
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        keep = sorted({*fds, report})
        for low, high in zip([2, *keep], [*keep, _MAX_FD], strict=True):
            os.closerange(low + 1, high)  # the server's socket, selector and wake-up pipe go
        # Subreaper before the child exists: nothing it forks can escape.
        # A lost server is seen by PR_SET_PDEATHSIG (and a getppid check).
        if not reaper._setup() or os.getppid() != server:
            os._exit(1)
        pid = os.fork()
        if pid == 0:
            os.close(report)
            _child(request, fds, child_module)
        os.write(report, f"{pid}\n".encode())
        os.close(report)
        os.close(fds[0])
        err = fds[1]  # the child's stderr: where a failed kill is told
        control_r, _control_w = os.pipe()  # never readable: the server sends no command
        tree = reaperkill._Tree(control_r, os.open(os.devnull, os.O_WRONLY), server)
        tree.agent = pid
        while True:
            tree.reap()
            if tree.code is not None or tree.stop or tree.lab_gone():
                break
            tree.pause(_SUBREAPER_TICK)
        if not reaper.freeze_kill(tree, None):  # every descendant, the child too if alive
            with contextlib.suppress(OSError):
                os.write(err, b"faultlab: some processes of the app child survived the kill\n")
        tree.reap()
        code = -int(signal.SIGKILL) if tree.code is None else tree.code
    except BaseException:
        traceback.print_exc()
    finally:
        _leave_as(code)


def _leave_as(code: int) -> None:
    """Exit with status `code` (negative: killed by that signal), as the
    child did, so the server's waitpid sees the child's status."""
    if code < 0:
        with contextlib.suppress(BaseException):
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
            if -code not in (signal.SIGKILL, signal.SIGSTOP):
                signal.signal(-code, signal.SIG_DFL)
                signal.pthread_sigmask(signal.SIG_UNBLOCK, [-code])
            os.kill(os.getpid(), -code)
        code = 128 - code
    os._exit(code & 0xFF)


def _child(request: dict[str, Any], fds: list[int], child_module: str) -> None:
    """The forked child's whole life; never returns."""
    code = 1
    try:
        os.setsid()
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(fds[0], 1)
        os.dup2(fds[1], 2)
        os.closerange(3, _MAX_FD)  # the server's socket, selector and wake-up pipe go
        _take_environment(request["env"])
        if request.get("cwd"):
            os.chdir(request["cwd"])
        try:
            module = importlib.import_module(child_module)  # imported already, unless broken
            sys.argv = [module.__file__ or child_module, *request["argv"]]  # as `python -m` does
            code = module.main(request["argv"])
        except SystemExit as exc:  # argparse, or the child's own sys.exit
            if exc.code is None or isinstance(exc.code, int):
                code = exc.code or 0
            else:
                print(exc.code, file=sys.stderr)
        except BaseException:  # as an interpreter would: the traceback, status 1
            traceback.print_exc()
        # What an interpreter does before it exits: wait for the non-daemon
        # threads (a framework's background writer), then the atexit handlers.
        shutdown = getattr(threading, "_shutdown", None)
        if shutdown is not None:
            shutdown()
        atexit._run_exitfuncs()
    except BaseException:
        traceback.print_exc()
    finally:
        # Nothing may keep this child from leaving here: it must never run on
        # into the server's loop.
        with contextlib.suppress(BaseException):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def _threads() -> int:
    """The threads of this process, the ones Python did not start included
    (a native library's pool is as unsafe to fork as a Python thread)."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return threading.active_count()


def _reap(sock: socket.socket, children: dict[int, int]) -> None:
    """Reap the supervisors that exited; report each one's child's status
    (`children`: supervisor pid -> child pid)."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        child = children.pop(pid, None)
        if child is not None:
            _send(sock, {"exited": child, "status": os.waitstatus_to_exitcode(status)})


def _fork(request: dict[str, Any], fds: list[int], child_module: str) -> tuple[int, int]:
    """Fork a case's supervisor and its child: (supervisor pid, child pid)."""
    report_r, report_w = os.pipe()
    try:
        supervisor = os.fork()
    except BaseException:
        os.close(report_r)
        os.close(report_w)
        raise
    if supervisor == 0:
        os.close(report_r)
        _supervise(request, fds, child_module, report_w)
    os.close(report_w)
    with os.fdopen(report_r, "rb") as answer:
        line = answer.readline()  # at once: the supervisor's first act is the fork
    if not line.strip().isdigit():
        with contextlib.suppress(ChildProcessError):
            os.waitpid(supervisor, 0)
        raise OSError("the case's supervisor could not start the child")
    return supervisor, int(line)


def serve(fd: int, child_module: str, app: str) -> None:
    """Import `child_module` and let it preload `app`, then fork one child
    running its `main(argv)` per request on the lab's socket `fd`, until
    the lab goes away."""
    with contextlib.suppress(Exception):
        # If the framework or the app does not import, each child meets the
        # same error itself and reports it the way an exec'd child does.
        importlib.import_module(child_module).preload(app)
    refusal = None
    threads = _threads()
    if threads != 1:
        # A fork copies only the calling thread: a lock another thread held
        # would stay held in every child.
        refusal = (f"{child_module}.preload({app!r}) left {threads} threads running: "
                   "a fork server must stay single-threaded (preload imports only)")  # fmt: skip
    # What exists now lives as long as the server: keep the collector off
    # it, so children do not copy its pages just to scan them.
    gc.freeze()
    sock = socket.socket(fileno=fd)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda _signum, _frame: None)
    selector = selectors.DefaultSelector()
    selector.register(sock, selectors.EVENT_READ, "lab")
    selector.register(wake_r, selectors.EVENT_READ, "child")
    children: dict[int, int] = {}  # supervisor pid -> its child's pid
    while True:
        for key, _mask in selector.select():
            if key.data == "child":
                with contextlib.suppress(BlockingIOError):
                    while os.read(wake_r, 4096):
                        pass
                _reap(sock, children)
                continue
            try:
                data, fds, _flags, _addr = socket.recv_fds(sock, _MAX_MESSAGE, len(FD_ORDER) + 1)
            except OSError:
                data, fds = b"", []
            if not data:
                # The lab went away: each supervisor sees this server
                # leave (PR_SET_PDEATHSIG) and kills its child's tree.
                return
            request = orjson.loads(data)
            if len(fds) != len(FD_ORDER) or refusal:
                for received in fds:
                    os.close(received)
                error = refusal or f"expected {len(FD_ORDER)} fds"
                _send(sock, {"failed": request.get("id"), "error": error})
                continue
            try:
                supervisor, pid = _fork(request, fds, child_module)
            except OSError as exc:
                pid, error = -1, f"cannot fork: {exc}"
            else:
                children[supervisor] = pid
            for received in fds:
                os.close(received)
            if pid < 0:
                _send(sock, {"failed": request["id"], "error": error})
            else:
                _send(sock, {"spawned": request["id"], "pid": pid})
            _reap(sock, children)


if __name__ == "__main__":
    socket_fd, child_name, app_name = sys.argv[1:4]
    serve(int(socket_fd), child_name, app_name)
