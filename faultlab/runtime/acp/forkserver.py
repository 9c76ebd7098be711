# The ACP agent's fork server: a single-threaded process that has imported
# the ACP SDK and the runtime, and forks one real agent per request, so an
# ACP crash case costs a fork instead of an interpreter start plus the SDK's
# import.  Same protocol as faultlab/runtime/forkserver.py (SOCK_SEQPACKET,
# one JSON message per packet, fds with SCM_RIGHTS; it is the one reaper of
# its children and reports each exit status), with five fds per request:
# the agent's stdin and stdout (the ACP pipes), stderr, and the probe pipes.
from __future__ import annotations

import gc
import os
import selectors
import signal
import socket
import sys
import traceback
from typing import Any

import orjson

from faultlab.runtime.forkserver import _reap, _send

__all__ = ["FD_ORDER", "serve"]

FD_ORDER = ("stdin", "stdout", "stderr", "report", "reply")
_MAX_MESSAGE = 1 << 20


def _child(request: dict[str, Any], fds: list[int], keep: set[int]) -> int:
    """Runs in the forked child: its own process group, only its fds, then the agent."""
    from faultlab.runtime.acp.__main__ import main

    os.setsid()
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    named = dict(zip(FD_ORDER, fds, strict=True))
    for target, name in ((0, "stdin"), (1, "stdout"), (2, "stderr")):
        os.dup2(named[name], target)
    report, reply = named["report"], named["reply"]
    for fd in keep | set(fds):
        if fd > 2 and fd not in (report, reply):
            os.close(fd)
    os.environ.clear()
    os.environ.update(request["env"])
    os.environ["FAULTLAB_PROBE_FDS"] = f"{report},{reply}"
    if request.get("cwd"):
        os.chdir(request["cwd"])
    sys.argv = ["faultlab.runtime.acp", *request["argv"]]
    return main(request["argv"])


def _fork(request: dict[str, Any], fds: list[int], keep: set[int]) -> int:
    pid = os.fork()
    if pid == 0:
        code = 3
        try:
            code = _child(request, fds, keep)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 2
        except BaseException:
            traceback.print_exc()
        finally:
            sys.stderr.flush()
            os._exit(code)
    for fd in fds:
        os.close(fd)
    return pid


def serve(fd: int) -> None:
    import acp  # noqa: F401  (the point of the server: imported once)

    import faultlab.runtime.acp.server  # noqa: F401

    sock = socket.socket(fileno=fd)
    gc.freeze()
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda _signum, _frame: None)
    selector = selectors.DefaultSelector()
    selector.register(sock, selectors.EVENT_READ, "lab")
    selector.register(wake_r, selectors.EVENT_READ, "child")
    keep = {fd, wake_r, wake_w, selector.fileno()}
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
                data, fds, _flags, _addr = socket.recv_fds(sock, _MAX_MESSAGE, len(FD_ORDER))
            except OSError:
                data, fds = b"", []
            if not data:
                return  # the lab went away
            request = orjson.loads(data)
            if len(fds) != len(FD_ORDER):
                for received in fds:
                    os.close(received)
                _send(sock, {"failed": request.get("id"), "error": "expected 5 fds"})
                continue
            try:
                pid = _fork(request, fds, keep)
            except OSError as exc:
                _send(sock, {"failed": request.get("id"), "error": str(exc)})
                continue
            _send(sock, {"spawned": request["id"], "pid": pid})
            _reap(sock)


if __name__ == "__main__":
    serve(int(sys.argv[1]))
