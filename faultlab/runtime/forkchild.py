# A forked child's side of the runtime's fork server
# (faultlab/runtime/forkserver.py): what a child does once it is handed its
# request.  It takes the request's fds as its stdio and probe pipes and
# closes the server's, takes the request's environment, working directory
# and argv (faultlab/forking/child.py, every server's), runs the runtime with
# the scenario the server parsed before the fork, and releases everything but
# its probe pipes before it reports its exit code.  A request may name a
# script instead (a zoo variant: a script that patches the runtime, then
# runs it): the child runs it as `__main__` (faultlab/forking/script.py).
from __future__ import annotations

import contextlib
import os
import sys
from typing import Any

import orjson

from faultlab.forking.child import MAX_FD, enter_child
from faultlab.forking.script import run_script
from faultlab.probe import RELEASED
from faultlab.runtime import __main__ as entry
from faultlab.scenario import Scenario, ScenarioError, load_scenario

__all__ = ["FD_ORDER", "release", "remember_scenario", "run_child"]

# The fds a request passes, in this order.
FD_ORDER = ("report", "reply", "stderr")


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


_scenarios = _Scenarios()  # the server's; a child forked later reads its copy


def run_child(request: dict[str, Any], fds: list[int], keep: set[int]) -> int:
    """Runs in the forked child: the runtime with its probe pipes and stderr
    (or the request's script, `run_script`)."""
    named = dict(zip(FD_ORDER, fds, strict=True))
    argv = request["argv"]
    script = request.get("script")
    # Parsed by the server before this child was forked, unless the file
    # changed since (or was never seen): then the runtime loads it itself.
    scenario = _scenarios.get(argv[0]) if argv else None
    null = os.open(os.devnull, os.O_RDONLY)
    enter_child(
        request, stdio=(null, named["stderr"], named["stderr"]),
        probe=(named["report"], named["reply"]), close=keep | set(fds) | {null},
        program=script or "faultlab.runtime",
    )  # fmt: skip
    if script:
        # No early release: a script's threads may still write after its
        # main returns, so the lab waits for the real exit.
        return run_script(script)
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
    os.closerange(high + 1, MAX_FD)
    with contextlib.suppress(OSError):  # the lab went away: nobody waits for it
        os.write(report_fd, orjson.dumps({RELEASED: code}) + b"\n")
    os.close(report_fd)


def remember_scenario(request: dict[str, Any]) -> None:
    """In the server, after a hand-over: parse the request's scenario (if new
    or changed), so that the children forked from now on inherit it."""
    argv = request.get("argv")
    if isinstance(argv, list) and argv and isinstance(argv[0], str):
        _scenarios.get(argv[0])
