# Nothing a forked child starts outlives it, for every fork server (they
# share one loop and one containment: faultlab/forking/serve.py and
# contain.py).  A stand-in server on that loop
# (tests/fixtures/forkchild/daemonserver.py) forks children that start a
# daemon in a session of its own (setsid, or a double fork) and then exit,
# or sleep until the lab kills their group; once the server has reported
# the child's exit, the daemon must be gone: in a PID namespace of the
# child's own (root), and with FAULTLAB_PIDNS=0's subreapers too.  And the
# real servers (the runtime's, the ACP agent's) fork each child into a PID
# namespace of its own where the kernel allows one.
from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from faultlab.lab.acp.fork import ACP_SERVER
from faultlab.lab.process.forkserver import RUNTIME_SERVER, ForkServer
from faultlab.lab.process.tree import ContainedProcess
from tests.fixtures.daemons import alive, started

pytestmark = pytest.mark.realprocess

REPO = Path(__file__).resolve().parents[2]
SERVER = "tests.fixtures.forkchild.daemonserver"
ROOT = os.geteuid() == 0  # unshare(CLONE_NEWPID) needs CAP_SYS_ADMIN
WITHIN = 60.0


@pytest.fixture(params=[True, False], ids=["pidns", "subreapers"])
def server(request: pytest.FixtureRequest) -> Iterator[ForkServer]:
    if request.param and not ROOT:
        pytest.skip("a PID namespace per child needs root")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    made = ForkServer(SERVER, what="the test's fork server", ahead=1, env=env, cwd=str(REPO),
                      pidns=request.param)  # fmt: skip
    try:
        yield made
    finally:
        made.close()


def _fork(server: ForkServer, tmp: Path, folder: Path, how: str, end: str) -> ContainedProcess:
    out = os.open(tmp / "out", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    err = os.open(tmp / "err", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        return ContainedProcess.fork(server, [str(folder), how, end], env=dict(os.environ),
                                     fds=(out, err), cwd=str(tmp))  # fmt: skip
    finally:
        os.close(out)
        os.close(err)


@pytest.mark.parametrize("how", ["single", "double"])
@pytest.mark.parametrize("end", ["exit", "kill"])
def test_a_daemon_a_forked_child_starts_is_gone_once_its_exit_is_reported(
    server: ForkServer, tmp_path: Path, daemons: Path, how: str, end: str
) -> None:
    process = _fork(server, tmp_path, daemons, how, "exit" if end == "exit" else "sleep")
    try:
        assert process.forked
        if end == "kill":
            deadline = time.monotonic() + WITHIN
            while b"ready" not in (tmp_path / "out").read_bytes():
                assert process.wait(0.01) is None, (tmp_path / "err").read_text()
                assert time.monotonic() < deadline
            process.kill()  # its process group: the daemon left it
        status = process.wait(WITHIN)
        assert status == (0 if end == "exit" else -signal.SIGKILL), (tmp_path / "err").read_text()
        assert started(daemons) == 1
        # Gone before the server reported the exit: no wait, no sweep here.
        assert alive(daemons) == []
    finally:
        process.close()


def test_the_checker_sees_a_daemon_that_outlives_its_starter(tmp_path: Path, daemons: Path) -> None:
    # The daemons fixture's own check, on a daemon nothing contains: it
    # must see it alive (the `daemons` fixture kills it afterwards).
    from tests.fixtures.daemons import start_daemon

    start_daemon(daemons)
    assert started(daemons) == 1 and len(alive(daemons)) == 1


@pytest.mark.skipif(not ROOT, reason="a PID namespace per child needs root")
@pytest.mark.parametrize("module", [RUNTIME_SERVER, ACP_SERVER])
def test_the_runtimes_servers_fork_each_child_into_a_pid_namespace_of_its_own(
    module: str,
) -> None:
    server = ForkServer(module, ahead=2)
    try:
        deadline = time.monotonic() + WITHIN
        while len(waiting := _children(server.pid)) < 2:
            assert time.monotonic() < deadline, "the server forked no child ahead"
            time.sleep(0.05)
        own = os.readlink("/proc/self/ns/pid")
        theirs = {os.readlink(f"/proc/{pid}/ns/pid") for pid in waiting}
        assert os.readlink(f"/proc/{server.pid}/ns/pid") == own
        assert own not in theirs and len(theirs) == len(waiting)  # one namespace each
    finally:
        server.close()


def _children(pid: int) -> list[int]:
    import psutil

    return [child.pid for child in psutil.Process(pid).children()]
