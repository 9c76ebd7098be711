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
# non-daemon threads joined, the atexit handlers run, stdio flushed.  The
# server is its one reaper and reports its exit status.
from __future__ import annotations

import atexit
import contextlib
import gc
import importlib
import os
import selectors
import signal
import socket
import sys
import threading
import traceback
from typing import Any

import orjson

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


def _child(request: dict[str, Any], fds: list[int], child_module: str) -> None:
    """The forked child's whole life; never returns."""
    code = 1
    try:
        os.setsid()
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
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


def _reap(sock: socket.socket) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        _send(sock, {"exited": pid, "status": os.waitstatus_to_exitcode(status)})


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
    while True:
        for key, _mask in selector.select():
            if key.data == "child":
                with contextlib.suppress(BlockingIOError):
                    while os.read(wake_r, 4096):
                        pass
                _reap(sock)
                continue
            try:
                data, fds, _flags, _addr = socket.recv_fds(sock, _MAX_MESSAGE, len(FD_ORDER) + 1)
            except OSError:
                data, fds = b"", []
            if not data:
                # The lab went away: its children are its to kill (they
                # lead their own sessions); this server only leaves.
                return
            request = orjson.loads(data)
            if len(fds) != len(FD_ORDER) or refusal:
                for received in fds:
                    os.close(received)
                error = refusal or f"expected {len(FD_ORDER)} fds"
                _send(sock, {"failed": request.get("id"), "error": error})
                continue
            try:
                pid = os.fork()
            except OSError as exc:
                pid, error = -1, f"cannot fork: {exc}"
            if pid == 0:
                _child(request, fds, child_module)
            for received in fds:
                os.close(received)
            if pid < 0:
                _send(sock, {"failed": request["id"], "error": error})
            else:
                _send(sock, {"spawned": request["id"], "pid": pid})
            _reap(sock)


if __name__ == "__main__":
    socket_fd, child_name, app_name = sys.argv[1:4]
    serve(int(socket_fd), child_name, app_name)
