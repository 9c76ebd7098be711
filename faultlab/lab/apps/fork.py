# The lab's side of the `--app` fork server (faultlab/lab/apps/forkserver.py):
# one server per (child module, app module, working directory, PYTHONPATH)
# in the lab's one registry of fork servers (faultlab/lab/process/forkserver.py),
# shared by the cases of a lab process and closed at its exit, and a child
# forked by it: a `ContainedProcess` like every other (tree.py), the kill
# SIGKILL to its process group, its tree contained by the server (a PID
# namespace of its own where the kernel allows one: whatever it started, a
# setsid daemon or a double fork, dies with it).  The exec'd child
# (--spawn exec) stays the fidelity reference.
from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from faultlab.lab.errors import LabUsageError
from faultlab.lab.process.forkserver import ForkServer, ForkServerError, shared_server
from faultlab.lab.process.tree import ContainedProcess

__all__ = ["APP_SERVER", "app_server", "fork_app"]

APP_SERVER = "faultlab.lab.apps.forkserver"


def app_server(child_module: str, app: str, *, cwd: str, env: Mapping[str, str]) -> ForkServer:
    """The shared server that has run `child_module.preload(app)` (`app`:
    the child's --app, MODULE:..., or "" for a server of the framework
    alone, whose children import the app's module themselves) in `cwd`
    with `env`'s PYTHONPATH: what decides which modules it imported.
    Started on first use, closed at exit; it forks on request (nothing ahead)."""
    key = (child_module, app.partition(":")[0], cwd, env.get("PYTHONPATH", ""))
    return shared_server(APP_SERVER, ahead=0, arguments=(child_module, app), env=env, cwd=cwd,
                         what="the app fork server", key=key)  # fmt: skip


def fork_app(
    server: ForkServer, argv: Sequence[str], *, cwd: str | os.PathLike[str],
    env: Mapping[str, str], stdout_path: Path, stderr_path: Path,
) -> ContainedProcess:  # fmt: skip
    """Fork `CHILD_MODULE.main(argv)` with stdout and stderr to files and
    stdin from /dev/null, as ContainedProcess.start runs an exec'd one."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    out = os.open(stdout_path, flags, 0o644)
    try:
        err = os.open(stderr_path, flags, 0o644)
        try:
            return ContainedProcess.fork(server, argv, env=env, fds=(out, err),
                                         cwd=os.fspath(cwd))  # fmt: skip
        finally:
            os.close(err)
    except ForkServerError as exc:
        raise LabUsageError(f"{exc} (--spawn exec runs a fresh interpreter instead)") from None
    finally:
        os.close(out)
