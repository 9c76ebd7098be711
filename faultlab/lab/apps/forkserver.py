# The fork server of `--app` cases (`python -m faultlab.lab.apps.forkserver
# FD [AHEAD] [flat] -- CHILD_MODULE APP`): a single-threaded process that has
# imported the framework and the user's module once (the child module's
# `preload(app)`), and forks one real child per request, which runs the
# child module's `main(argv)`: a case's two children then cost two forks
# instead of two interpreter starts plus the framework's import (about a
# second each).
#
# It lives in the lab, not beside faultlab/runtime/forkserver.py, because
# its children are the lab's app children (faultlab/lab/apps/lgchild.py and
# its siblings import lab code), and the runtime never imports the lab (nor
# the lab the runtime: pyproject [tool.importlinter]).  The loop, the
# protocol and the containment of each child are every fork server's
# (faultlab/forking/serve.py): each child in a PID namespace of its own where
# the kernel allows it, so whatever it starts (a setsid daemon, a double
# fork) dies with it.  What is the app server's: two fds per request (the
# child's stdout and stderr files), nothing forked ahead by default (a fork
# of this server takes 2-5 ms, next to a case's hundred-odd), no probe pipes
# (an app child reports to the gate over a Unix socket named in its argv),
# a refusal to fork when the preload left threads running, and a child that
# leaves the way an interpreter does: its non-daemon threads joined, the
# atexit handlers run, stdio flushed.
from __future__ import annotations

import atexit
import contextlib
import gc
import importlib
import os
import sys
import threading
import traceback
from typing import Any

from faultlab.forking.child import MAX_FD, ForkChild, enter_child
from faultlab.forking.serve import serve_requests, server_arguments

__all__ = ["FD_ORDER", "serve"]

FD_ORDER = ("stdout", "stderr")


def _threads() -> int:
    """The threads of this process, the ones Python did not start included
    (a native library's pool is as unsafe to fork as a Python thread)."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return threading.active_count()


def _child(child_module: str) -> ForkChild:
    """What a forked child runs once handed its request: the child module's
    `main(argv)` on the request's stdout and stderr, as an interpreter would."""

    def run(request: dict[str, Any], fds: list[int], keep: set[int]) -> int:
        null = os.open(os.devnull, os.O_RDONLY)
        enter_child(request, stdio=(null, fds[0], fds[1]), probe=None,
                    close=keep | set(fds) | {null}, program=child_module)  # fmt: skip
        os.closerange(3, MAX_FD)  # and whatever the preload opened, as an exec'd child has none
        code = 1
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
        return int(code)

    return run


def serve(argv: list[str]) -> None:
    """Import the child module and let it preload the app, then fork one
    child running its `main(argv)` per request on the lab's socket, until
    the lab goes away."""
    arguments = server_arguments(argv)
    child_module, app = arguments.extra
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
    serve_requests(arguments, FD_ORDER, _child(child_module), refusal=refusal)


if __name__ == "__main__":
    serve(sys.argv[1:])
