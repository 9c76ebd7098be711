# A forked child's side of the fork server (faultlab/runtime/forkserver.py):
# what a child does once it is handed its request.  It takes the request's
# fds as its stdio and probe pipes and closes the server's, takes the
# request's environment, working directory and argv, runs the runtime with
# the scenario the server parsed before the fork, and releases everything but
# its probe pipes before it reports its exit code.
from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Callable
from typing import Any

import orjson

from faultlab.probe import RELEASED
from faultlab.runtime import __main__ as entry
from faultlab.scenario import Scenario, ScenarioError, load_scenario

__all__ = [
    "FD_ORDER",
    "ForkChild",
    "detach",
    "enter_child",
    "release",
    "remember_scenario",
    "run_child",
]

# The fds a request passes, in this order.
FD_ORDER = ("report", "reply", "stderr")
_MAX_FD = os.sysconf("SC_OPEN_MAX")


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
    """In a forked child that was handed its request (already the leader of a
    new session, see `detach`): take `stdio` as fds 0-2, close every other fd
    of `close` but the probe pipes, and take the request's environment,
    working directory and argv."""
    for target, fd in enumerate(stdio):
        os.dup2(fd, target)
    for fd in close:
        if fd > 2 and fd not in probe:
            os.close(fd)
    _take_environment({**request["env"], "FAULTLAB_PROBE_FDS": f"{probe[0]},{probe[1]}"})
    if request.get("cwd"):
        os.chdir(request["cwd"])
    sys.argv = [program, *request["argv"]]


def _take_environment(wanted: dict[str, str]) -> None:
    """Make the environment exactly `wanted` (os.environ and the C-level one
    a subprocess would inherit), setting and unsetting only the variables
    that differ.  The lab starts the server with the environment it gives
    every child, so only the probe's variables usually differ: clearing and
    refilling all of them cost 0.5 ms a child, as much as one wake-up hop."""
    environ = os.environ
    for key in [key for key in environ if key not in wanted]:
        del environ[key]
    for key, value in wanted.items():
        if environ.get(key) != value:
            environ[key] = value


_scenarios = _Scenarios()  # the server's; a child forked later reads its copy


def run_child(request: dict[str, Any], fds: list[int], keep: set[int]) -> int:
    """Runs in the forked child: the runtime with its probe pipes and stderr."""
    named = dict(zip(FD_ORDER, fds, strict=True))
    argv = request["argv"]
    # Parsed by the server before this child was forked, unless the file
    # changed since (or was never seen): then the runtime loads it itself.
    scenario = _scenarios.get(argv[0]) if argv else None
    null = os.open(os.devnull, os.O_RDONLY)
    enter_child(
        request, stdio=(null, named["stderr"], named["stderr"]),
        probe=(named["report"], named["reply"]), close=keep | set(fds) | {null},
        program="faultlab.runtime",
    )  # fmt: skip
    code = entry.main(argv, scenario=scenario)
    release(named["report"], named["reply"], code)
    return code


def release(report_fd: int, reply_fd: int, code: int) -> None:
    """The child's last act before `os._exit(code)`: flush, close every fd but
    the probe pipes (the session's files and the writer lock go with them),
    then report the exit code and close the report pipe.  From then on this
    process can change nothing the lab looks at, so the lab goes on with
    the case while the kernel tears the process down: unmapping all it
    shares with the server and freeing the pages it copied took about 2 ms
    a child, from here to the server's SIGCHLD.  The server still reaps it
    and reports the real exit status, which the lab checks later.  The
    reply pipe stays open: the probe's reader thread is blocked on it, and
    must not see an error (or, from the lab, EOF) and exit with another code."""
    sys.stdout.flush()
    sys.stderr.flush()
    low, high = sorted((report_fd, reply_fd))
    os.closerange(0, low)
    os.closerange(low + 1, high)
    os.closerange(high + 1, _MAX_FD)
    with contextlib.suppress(OSError):  # the lab went away: nobody waits for it
        os.write(report_fd, orjson.dumps({RELEASED: code}) + b"\n")
    os.close(report_fd)


def remember_scenario(request: dict[str, Any]) -> None:
    """In the server, after a hand-over: parse the request's scenario (if new
    or changed), so that the children forked from now on inherit it."""
    argv = request.get("argv")
    if isinstance(argv, list) and argv and isinstance(argv[0], str):
        _scenarios.get(argv[0])


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
