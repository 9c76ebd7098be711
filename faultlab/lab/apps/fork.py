# The lab's side of the `--app` fork server (faultlab/lab/apps/forkserver.py):
# one server per (child module, app module, working directory, PYTHONPATH),
# shared by the cases of a lab process and closed at its exit, and the
# handle of a child forked by it, with the three calls the app drive makes
# of a ContainedProcess (wait, kill_tree, close).  A forked child leads a
# session of its own: the kill is SIGKILL to its process group, which takes
# its threads with it.  It is contained as an exec'd child is: the server
# forks it under a per-case supervisor, a child subreaper running reaper.py's
# kill, so whatever it started (a setsid daemon, a double fork) is killed
# once it has exited, before its exit status reaches the lab; a supervisor
# whose server is gone kills its child's tree (PR_SET_PDEATHSIG).  The
# exec'd child (--spawn exec) stays the fidelity reference, and adds a PID
# namespace where the kernel allows one.
from __future__ import annotations

import atexit
import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

from faultlab.lab.errors import LabUsageError
from faultlab.lab.process.forkserver import ForkedProcess, ForkServer, ForkServerError

__all__ = ["AppForkServer", "ForkedApp", "app_server", "close_forked"]

_KILLED_WITHIN = 30.0  # seconds a SIGKILLed child may take to be reaped


class AppForkServer(ForkServer):
    """A fork server whose children are app children (`CHILD_MODULE.main`)."""

    module = "faultlab.lab.apps.forkserver"
    what = "the app fork server"

    @property
    def pid(self) -> int:
        """The server's pid: every child it forks is its child."""
        return self._process.pid


_servers: dict[tuple[str, str, str, str], AppForkServer] = {}
_servers_lock = threading.Lock()
_live: set[ForkedApp] = set()


def app_server(child_module: str, app: str, *, cwd: str, env: Mapping[str, str]) -> AppForkServer:
    """The shared server that has run `child_module.preload(app)` (`app`:
    the child's --app, MODULE:...) in `cwd` with `env`'s PYTHONPATH: what
    decides which modules it imported.  Started on first use, closed at exit."""
    key = (child_module, app.partition(":")[0], cwd, env.get("PYTHONPATH", ""))
    with _servers_lock:
        server = _servers.get(key)
        if server is None or server._closed:
            server = _servers[key] = AppForkServer(arguments=(child_module, app), env=env,
                                                   cwd=cwd)  # fmt: skip
            atexit.register(server.close)
        return server


def close_forked() -> None:
    """Kill every forked app child still running (on interrupt of the lab)."""
    for child in list(_live):
        child.close()


class ForkedApp:
    """An app child forked by an `AppForkServer`."""

    def __init__(self, process: ForkedProcess) -> None:
        self._process = process
        self.pid = process.pid
        _live.add(self)

    @classmethod
    def start(
        cls, server: AppForkServer, argv: Sequence[str], *, cwd: str | os.PathLike[str],
        env: Mapping[str, str], stdout_path: Path, stderr_path: Path,
    ) -> ForkedApp:  # fmt: skip
        """Fork `CHILD_MODULE.main(argv)` with stdout and stderr to files and
        stdin from /dev/null, as ContainedProcess.start runs an exec'd one."""
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
        out = os.open(stdout_path, flags, 0o644)
        try:
            err = os.open(stderr_path, flags, 0o644)
            try:
                process = server.request(argv, env=env, fds=(out, err), cwd=os.fspath(cwd))
            finally:
                os.close(err)
        except ForkServerError as exc:
            raise LabUsageError(f"{exc} (--spawn exec runs a fresh interpreter instead)") from None
        finally:
            os.close(out)
        return cls(process)

    def wait(self, timeout: float) -> int | None:
        """Its exit status (negative: killed by that signal), or None if it
        did not exit within `timeout` seconds."""
        try:
            return self._process.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def _signal_group(self) -> None:
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            # Not yet the leader of its session (setsid is its first act
            # after the fork), or its group is empty: the process itself.
            if self._process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.pid, signal.SIGKILL)

    def kill_tree(self, timeout: float = _KILLED_WITHIN) -> int | None:
        """SIGKILL the child's process group; returns its status once its
        supervisor has killed what else it started and the server has
        reaped the supervisor."""
        if self._process.poll() is None:
            self._signal_group()
        return self.wait(timeout)

    def close(self) -> None:
        """Kill it if it still runs; nothing of it outlives this."""
        if self not in _live:
            return
        try:
            if self._process.poll() is None:
                self.kill_tree()
        finally:
            _live.discard(self)
