# A forked child's first steps, the same for every fork server (the
# runtime's, the ACP agent's, the app children's): leave the server's
# session and signal plumbing (`detach`), then, once handed a request, take
# its fds as stdio (and probe pipes), close every fd of the server's, and
# take the request's environment, working directory and argv (`enter_child`),
# exactly what an exec'd child would start with; a traced request's child
# then waits there for the lab's tracer (`wait_for_tracer`).
from __future__ import annotations

import ctypes
import os
import signal
import sys
from collections.abc import Callable, Collection
from typing import Any

from faultlab.probe import ENV_FDS

__all__ = [
    "MAX_FD",
    "TRACER_SIGNAL",
    "WAITING_NAME",
    "ForkChild",
    "detach",
    "enter_child",
    "take_environment",
    "wait_for_tracer",
]

MAX_FD = os.sysconf("SC_OPEN_MAX")
# What a traced child waits for, blocked: the lab sends it once its tracer
# holds the child (faultlab/lab/process/tracefork.py).
TRACER_SIGNAL = signal.SIGCONT
# The name (at most 15 bytes) a traced child bears while it waits for that.
WAITING_NAME = "faultlab-tracee"
_PR_SET_NAME, _PR_GET_NAME = 15, 16
_LIBC = ctypes.CDLL(None, use_errno=True)

# What a child runs once handed its request: (request, its fds in the server's
# order, the server's fds it must close) -> exit code.
ForkChild = Callable[[dict[str, Any], list[int], set[int]], int]


def detach() -> None:
    """First thing in a new child: its own session and process group (so the
    lab's SIGKILL of the group reaches it and nothing else), and none of the
    server's signal plumbing."""
    os.setsid()
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)


def enter_child(
    request: dict[str, Any], *, stdio: tuple[int, int, int], probe: tuple[int, int] | None,
    close: Collection[int], program: str,
) -> None:  # fmt: skip
    """In a forked child that was handed its request (already the leader of a
    new session, see `detach`): take `stdio` as fds 0-2, close every other fd
    of `close` but the probe pipes, and take the request's environment (with
    the probe's fds named in it, if it has `probe` pipes), working directory
    and argv (`program` as argv[0]).  A traced request (`"traced": true`)
    then waits for its tracer (`wait_for_tracer`) before it returns."""
    for target, fd in enumerate(stdio):
        os.dup2(fd, target)
    kept = set(probe or ())
    for fd in close:
        if fd > 2 and fd not in kept:
            os.close(fd)
    wanted = dict(request["env"])
    if probe is not None:
        wanted[ENV_FDS] = f"{probe[0]},{probe[1]}"
    take_environment(wanted)
    if request.get("cwd"):
        os.chdir(request["cwd"])
    sys.argv = [program, *request["argv"]]
    if request.get("traced"):
        wait_for_tracer()


def wait_for_tracer() -> None:
    """A traced run (the reference run under strace): wait here, holding
    what an exec'd program holds at its start, until the lab has attached
    its tracer and sends `TRACER_SIGNAL`.  Not a SIGSTOP to itself: a child
    that is the init of its PID namespace (contain.py) never receives a
    stop signal it sends itself.  Blocked, the signal is queued even for
    such an init (a blocked signal is never discarded as ignored), and one
    the lab sends before the wait starts is kept until it does.  The lab
    attaches once the process bears `WAITING_NAME` (its name in
    /proc/PID/status: `sigwait` unblocks the signal while it waits, so the
    mask cannot tell), and from then on this process makes no call of the
    run before the signal comes, so the tracer misses none.  It is
    single-threaded here (forked from a single-threaded server, before the
    program starts a thread): no other thread can take the signal."""
    wanted = {TRACER_SIGNAL}
    before = signal.pthread_sigmask(signal.SIG_BLOCK, wanted)
    name = ctypes.create_string_buffer(16)
    _LIBC.prctl(_PR_GET_NAME, name, 0, 0, 0)
    _LIBC.prctl(_PR_SET_NAME, WAITING_NAME.encode(), 0, 0, 0)
    try:
        signal.sigwait(wanted)  # retried on EINTR (the tracer's attach interrupts it)
    finally:
        _LIBC.prctl(_PR_SET_NAME, name, 0, 0, 0)
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


def take_environment(wanted: dict[str, str]) -> None:
    """Make the environment exactly `wanted` (os.environ and the C-level one
    a subprocess would inherit), setting and unsetting only the variables
    that differ.  The lab starts each server with the environment it gives
    every child, so only the probe's variables usually differ: clearing and
    refilling all of them cost 0.5 ms a child, as much as one wake-up hop."""
    environ = os.environ
    for key in [key for key in environ if key not in wanted]:
        del environ[key]
    for key, value in wanted.items():
        if environ.get(key) != value:
            environ[key] = value
