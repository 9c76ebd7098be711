# A black-box agent's whole process tree is contained and killed: escaping
# grandchildren, daemons, helpers in groups of their own, fork chains, and the
# lab itself dying.  Real processes only; each case has a unique marker in its
# command line, and `leftovers(marker)` over every process proves 0 remain.
from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest

from faultlab.lab.errors import LabUsageError
from faultlab.lab.process.live import kill_all
from faultlab.lab.process.tree import FREEZER, ContainedProcess, leftovers

pytestmark = pytest.mark.realprocess

REPO = Path(__file__).resolve().parents[2]
AGENT = Path(__file__).with_name("targets") / "tree_agent.py"
WITHIN = 60.0  # generous: the machine is shared
PIDNS = os.geteuid() == 0  # unshare(CLONE_NEWPID) needs CAP_SYS_ADMIN


@pytest.fixture
def tag() -> Iterator[str]:
    """A unique marker for one test's processes; whatever a failing test left
    is frozen and killed afterwards (a fork chain too), so a regression never
    leaves orphans on the machine."""
    value = f"fl-tree-{uuid.uuid4().hex}"
    yield value
    deadline = time.monotonic() + WITHIN
    while (left := leftovers(value)) and time.monotonic() < deadline:
        for proc in left:  # a group stop first: a fork chain outruns one pid at a time
            with contextlib.suppress(OSError, psutil.Error):
                if os.getpgid(proc.pid) != os.getpgrp():
                    os.killpg(os.getpgid(proc.pid), signal.SIGSTOP)
            with contextlib.suppress(psutil.Error):
                proc.suspend()
        for proc in left:
            with contextlib.suppress(psutil.Error):
                proc.kill()


@dataclass(frozen=True)
class How:
    """One way of containing the tree."""

    cgroup: bool
    pidns: bool


@pytest.fixture(params=["pidns", "scan", "cgroup"])
def how(request: pytest.FixtureRequest) -> How:
    """Every way of finding and killing the tree: a PID namespace of its own
    (the default where the kernel allows it), /proc scans under the
    subreaper, the case's freezer cgroup."""
    if request.param == "pidns" and not PIDNS:
        pytest.skip("unshare(CLONE_NEWPID) is not allowed here (needs root)")
    if request.param == "cgroup" and os.environ.get("FAULTLAB_CGROUP") != "1":
        # Opt-in like the lab's own use (docs/decisions.md).
        pytest.skip("per-case freezer cgroups are opt-in: FAULTLAB_CGROUP=1")
    if request.param == "cgroup" and not os.access(FREEZER, os.W_OK):
        pytest.skip("the freezer cgroup hierarchy is not writable here")
    return How(cgroup=request.param == "cgroup", pidns=request.param == "pidns")


def start(
    tmp_path: Path, mode: str, tag: str, *extra: str, how: How | None = None
) -> ContainedProcess:
    proc = ContainedProcess.start(
        [sys.executable, str(AGENT), mode, tag, str(tmp_path / "ready"), *extra],
        cwd=tmp_path, env=dict(os.environ), stdin_path=None,
        stdout_path=tmp_path / "out", stderr_path=tmp_path / "err",
        cgroup=how.cgroup if how else None, pidns=how.pidns if how else None,
    )  # fmt: skip
    if how is not None:
        assert proc.namespaced == how.pidns
    return proc


def ready(tmp_path: Path) -> list[int]:
    path = tmp_path / "ready"
    deadline = time.monotonic() + WITHIN
    while not path.exists():
        assert time.monotonic() < deadline, (tmp_path / "err").read_text()
        time.sleep(0.01)
    return [int(pid) for pid in path.read_text().split()]


def finished(pid: int) -> bool:
    """The process exited within the (bounded) time a killer gets: gone, or
    a zombie its new parent (init) has not reaped yet; it may be reaped
    between two looks.  (A supervisor kills its tree first and exits after:
    on a loaded machine the tree can be gone a moment before it is.)"""
    deadline = time.monotonic() + WITHIN
    while True:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)


def gone(tag: str) -> list[psutil.Process]:
    """What is left of `tag` once the killers had their (bounded) time."""
    deadline = time.monotonic() + WITHIN
    while (left := leftovers(tag)) and time.monotonic() < deadline:
        time.sleep(0.02)
    return left


def test_setsid_grandchild_ignoring_sigterm_is_killed(tmp_path: Path, tag: str, how: How) -> None:
    with start(tmp_path, "escape", tag, how=how) as proc:
        (grandchild,) = ready(tmp_path)
        assert os.getsid(grandchild) == grandchild != os.getsid(proc.pid)
        # Its parent exited: it re-parented inside the tree, not to init.
        assert psutil.Process(grandchild).ppid() == proc.orphans_parent
        assert {p.pid for p in proc.descendants()} == {proc.pid, grandchild}
        assert proc.kill_tree() == -signal.SIGKILL
        assert leftovers(tag) == []


def test_double_forked_daemon_is_found_and_killed(tmp_path: Path, tag: str, how: How) -> None:
    with start(tmp_path, "daemon", tag, how=how) as proc:
        (daemon,) = ready(tmp_path)
        assert proc.wait(WITHIN) == 0
        # Orphaned twice over, it re-parented inside the tree, not to init.
        assert psutil.Process(daemon).ppid() == proc.orphans_parent
        assert [p.pid for p in proc.descendants()] == [daemon]
        proc.close()
        assert leftovers(tag) == []


def test_kill_agent_spares_a_helper_in_its_own_group(tmp_path: Path, tag: str, how: How) -> None:
    with start(tmp_path, "helper", tag, how=how) as proc:
        helper, worker = ready(tmp_path)
        assert proc.kill_agent() == -signal.SIGKILL
        left = {p.pid for p in leftovers(tag)}
        assert helper in left and worker not in left and proc.pid not in left
        assert helper in {p.pid for p in proc.descendants()}
        proc.close()
        assert leftovers(tag) == []


def test_fork_chain_is_frozen_then_killed(tmp_path: Path, tag: str, how: How) -> None:
    with start(tmp_path, "chain", tag, how=how) as proc:
        ready(tmp_path)
        assert proc.kill_tree() == -signal.SIGKILL
        assert leftovers(tag) == []


def test_exit_status_of_a_normal_exit_and_of_a_sigkill(tmp_path: Path, tag: str) -> None:
    with start(tmp_path, "exit", tag, "3") as proc:
        assert proc.wait(WITHIN) == 3
    (tmp_path / "second").mkdir()
    with start(tmp_path / "second", "escape", tag) as proc:
        (grandchild,) = ready(tmp_path / "second")
        assert proc.wait(0) is None
        os.kill(proc.pid, signal.SIGKILL)  # only the agent: its tree lives on
        assert proc.wait(WITHIN) == -signal.SIGKILL
        assert grandchild in {p.pid for p in proc.descendants()}
    assert leftovers(tag) == []


def test_stdin_env_and_passed_fds_reach_the_agent(tmp_path: Path, tag: str) -> None:
    (tmp_path / "in").write_bytes(b"hello")
    read, write = os.pipe()
    code = "import os,sys; os.write(int(sys.argv[1]), sys.stdin.buffer.read() + os.environb[b'M'])"
    try:
        with ContainedProcess.start(
            [sys.executable, "-c", code, str(write)], cwd=tmp_path,
            env={"M": tag.encode().hex()}, stdin_path=tmp_path / "in",
            stdout_path=tmp_path / "out", stderr_path=tmp_path / "out", pass_fds=(write,),
        ) as proc:  # fmt: skip
            os.close(write)
            assert proc.wait(WITHIN) == 0, (tmp_path / "out").read_text()
            assert os.read(read, 4096) == b"hello" + tag.encode().hex().encode()
    finally:
        os.close(read)


def test_a_missing_command_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(LabUsageError, match="no-such-agent"):
        ContainedProcess.start(
            ["no-such-agent-xyz"], cwd=tmp_path, env={"PATH": "/usr/bin"}, stdin_path=None,
            stdout_path=tmp_path / "out", stderr_path=tmp_path / "err",
        )  # fmt: skip


LAB = """
import os, sys, time
from faultlab.lab.process.tree import ContainedProcess
agent, tag, ready, out = sys.argv[1:5]
proc = ContainedProcess.start(
    [sys.executable, agent, "escape", tag, ready], cwd=out, env=dict(os.environ),
    stdin_path=None, stdout_path=out + "/out", stderr_path=out + "/err",
)
print(proc.supervisor.pid, flush=True)
time.sleep(600)
"""


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM])
def test_the_lab_dying_leaves_nothing(tmp_path: Path, signum: int, tag: str) -> None:
    lab = subprocess.Popen(
        [sys.executable, "-c", LAB, str(AGENT), tag, str(tmp_path / "ready"), str(tmp_path)],
        stdout=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    try:
        assert lab.stdout is not None
        supervisor = int(lab.stdout.readline())
        (grandchild,) = ready(tmp_path)
        inside = psutil.Process(supervisor).children(recursive=True)
        assert grandchild in {p.pid for p in inside}
        lab.send_signal(signum)
        assert lab.wait(WITHIN) == -signum
        assert gone(tag) == []
        assert finished(supervisor)
    finally:
        if lab.poll() is None:
            lab.kill()
            lab.wait(WITHIN)


def test_the_starting_thread_ending_does_not_kill_the_tree(tmp_path: Path, tag: str) -> None:
    # PR_SET_PDEATHSIG fires when the parent *thread* ends: the supervisor must
    # tell that from the lab ending, and keep the tree.
    box: list[ContainedProcess] = []
    thread = threading.Thread(target=lambda: box.append(start(tmp_path, "helper", tag)))
    thread.start()
    thread.join(WITHIN)
    (proc,) = box
    with proc:
        helper, _worker = ready(tmp_path)
        # A round trip through the supervisor, after the thread's death signal.
        assert proc.kill_agent() == -signal.SIGKILL
        assert helper in {p.pid for p in proc.descendants()}
    assert leftovers(tag) == []


def test_kill_all_from_another_thread_leaves_the_case_thread_its_pipes(
    tmp_path: Path, tag: str
) -> None:
    # The interrupt path: the main thread kills every open tree while a case
    # thread is inside wait().  Killing all used to close the tree's pipes too,
    # and the case thread's next read failed with EBADF (seen in CI) or read
    # whatever file had reused the number.  Now it asks and waits; the owner
    # alone reads and closes.
    proc = start(tmp_path, "escape", tag)
    ready(tmp_path)
    errors: list[BaseException] = []
    statuses: list[int | None] = []
    closed = threading.Event()

    def case() -> None:
        try:
            statuses.append(proc.wait(WITHIN))
            closed.wait(WITHIN)
            assert proc._reports is not None
            os.fstat(proc._reports._status)  # still this tree's pipe: nobody else closed it
            proc.close()
        except BaseException as error:  # the test reports it
            errors.append(error)

    thread = threading.Thread(target=case)
    thread.start()
    kill_all()
    closed.set()
    thread.join(WITHIN)
    assert not thread.is_alive() and errors == [] and statuses == [-signal.SIGKILL]
    assert gone(tag) == []


def test_a_process_moved_out_of_the_cgroup_is_still_killed(tmp_path: Path, tag: str) -> None:
    if os.environ.get("FAULTLAB_CGROUP") != "1":
        pytest.skip("per-case freezer cgroups are opt-in: FAULTLAB_CGROUP=1")
    if not os.access(FREEZER, os.W_OK):
        pytest.skip("the freezer cgroup hierarchy is not writable here")
    with start(tmp_path, "escape", tag, how=How(cgroup=True, pidns=False)) as proc:
        (grandchild,) = ready(tmp_path)
        case = Path(f"/proc/{grandchild}/cgroup").read_text()
        assert f"faultlab-case-{proc.supervisor.pid}" in case
        # Root may leave the case's cgroup: the subreaper still holds it.
        home = Path(FREEZER) / "cgroup.procs"
        home.write_text(str(grandchild))
        assert "faultlab-case" not in Path(f"/proc/{grandchild}/cgroup").read_text()
        assert proc.kill_tree() == -signal.SIGKILL
        assert leftovers(tag) == []
    assert not list(Path(FREEZER).glob(f"faultlab-case-{proc.supervisor.pid}"))


@pytest.mark.skipif(not PIDNS, reason="unshare(CLONE_NEWPID) is not allowed here (needs root)")
@pytest.mark.parametrize("mode", ["chain", "escape", "daemon"])
def test_the_supervisor_sigkilled_takes_its_namespace_along(
    tmp_path: Path, mode: str, tag: str
) -> None:
    # The one death no supervisor can clean up after: the kernel does, because
    # the namespace's init dies with it (PDEATHSIG) and takes every process of
    # the namespace along.  A fork chain here once outlived /proc-scan kills.
    with start(tmp_path, mode, tag, how=How(cgroup=False, pidns=True)) as proc:
        ready(tmp_path)
        proc.supervisor.kill()
        proc.supervisor.wait(WITHIN)
        assert gone(tag) == []


NETWORK_PROBE = """
import socket, sys
relayed, lab_only = int(sys.argv[1]), int(sys.argv[2])
with socket.create_connection(("127.0.0.1", relayed), timeout=30) as conn:
    conn.sendall(b"ping " * 100000)  # more than one buffer: the relay streams
    conn.shutdown(socket.SHUT_WR)
    got = b""
    while data := conn.recv(65536):
        got += data
print(len(got), got[:4].decode())
try:
    socket.create_connection(("127.0.0.1", lab_only), timeout=5)
    print("lab-only port reached")
except OSError as error:
    print("lab-only port:", type(error).__name__)
"""


@pytest.mark.skipif(not PIDNS, reason="unshare(CLONE_NEWNET) is not allowed here (needs root)")
def test_a_network_namespace_reaches_the_relayed_port_only(tmp_path: Path, tag: str) -> None:
    # The lab serves on a Unix socket; inside the tree's namespace the agent
    # dials 127.0.0.1:PORT and the supervisor relays it there.  A TCP port the
    # lab listens on in its own namespace is not reachable from inside.
    path = str(tmp_path / "lab.sock")
    with socket.socket(socket.AF_UNIX) as lab, socket.socket() as lab_only:
        lab.bind(path)
        lab.listen(1)
        lab_only.bind(("127.0.0.1", 0))
        lab_only.listen(1)
        relayed = free_port()

        def echo() -> None:
            conn, _ = lab.accept()
            with conn:
                data = b""
                while chunk := conn.recv(65536):
                    data += chunk
                conn.sendall(data.upper())

        server = threading.Thread(target=echo, daemon=True)
        server.start()
        with ContainedProcess.start(
            [sys.executable, "-c", NETWORK_PROBE, str(relayed),
             str(lab_only.getsockname()[1]), tag],
            cwd=tmp_path, env=dict(os.environ), stdin_path=None,
            stdout_path=tmp_path / "out", stderr_path=tmp_path / "out",
            forward={relayed: path},
        ) as proc:  # fmt: skip
            assert proc.networked and proc.namespaced
            assert proc.wait(WITHIN) == 0, (tmp_path / "out").read_text()
        server.join(WITHIN)
    lines = (tmp_path / "out").read_text().splitlines()
    assert lines == ["500000 PING", "lab-only port: ConnectionRefusedError"]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
