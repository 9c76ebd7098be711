# A forked child's first steps, the same for every fork server (the
# runtime's, the ACP agent's, the app children's): leave the server's
# session and signal plumbing (`detach`), then, once handed a request, take
# its fds as stdio (and probe pipes), close every fd of the server's, and
# take the request's environment, working directory and argv (`enter_child`),
# exactly what an exec'd child would start with.
from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable, Collection
from typing import Any

from faultlab.probe import ENV_FDS

__all__ = ["MAX_FD", "ForkChild", "detach", "enter_child", "take_environment"]

MAX_FD = os.sysconf("SC_OPEN_MAX")

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
    and argv (`program` as argv[0])."""
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
