# The fork server (faultlab/runtime/forkserver.py) through the lab's side of
# it: a forked child is the same runtime as an exec'd one (same files left
# behind, same verdict), holds none of the server's sockets, reads a scenario
# that changed after it was forked ahead, and no child forked ahead outlives
# the server or breaks a request by dying while it waits; the server starts
# with the environment it gives its children.
from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from faultlab import lab
from faultlab.lab.campaigns.determinism import check_determinism
from faultlab.lab.campaigns.explore import COVERAGE, explore, load_scenarios, plan_cases, run_one
from faultlab.lab.process.environment import trimmed_environment
from faultlab.lab.process.forkserver import ForkServer
from faultlab.lab.process.reference import LabOptions, run_reference, usable_cpus
from faultlab.lab.process.spawn import Child
from faultlab.scenario import load_scenario

pytestmark = pytest.mark.realprocess

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"


def _options(work: Path, spawn: str) -> LabOptions:
    return LabOptions(lab.make_target(), work, 60.0, spawn)


def test_forked_and_execd_children_leave_the_same_files_and_verdicts(tmp_path: Path) -> None:
    # check_determinism reruns a case (and its reference) and compares every
    # log, the ledger, the trace and the verdict, normalised: here the rerun
    # is exec'd, so any difference is one between the two spawn modes.
    path = str(SCENARIOS / "tiny-tool.toml")
    scenario = load_scenario(path)
    fork = _options(tmp_path / "fork", "fork")
    reference = run_reference(path, scenario, fork)
    assert reference.returncode == 0, reference.stderr
    cases = [c for c in plan_cases(reference) if c.occurrence != COVERAGE]
    assert len(cases) >= 10
    for case in cases[::3]:
        first = run_one(case, reference, fork)
        assert first.verdict == "pass", first
        difference = check_determinism(
            case, reference, first, _options(tmp_path / "exec", "exec"), workdir=tmp_path / "exec"
        )
        assert difference is None, difference


def _socket_inodes(pid: int) -> set[str]:
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:"):
            inodes.add(target)
    return inodes


def _parked_child(server: ForkServer, where: Path) -> Child:
    scenario = str(SCENARIOS / "tiny-tool.toml")
    session = where / "session"
    where.mkdir(parents=True)
    argv = [scenario, "--session-dir", str(session)]
    return Child(
        [*lab.make_target().command, *argv], stderr_path=where / "child.stderr",
        armed="tool/durable#1", cwd=str(where), server=server, server_argv=argv,
    )  # fmt: skip


def test_a_forked_child_holds_none_of_the_servers_sockets(tmp_path: Path) -> None:
    server = ForkServer()
    try:
        # Three children alive at once: the later ones were forked while
        # others waited, so they saw the server's ends of those sockets too.
        children = [_parked_child(server, tmp_path / name) for name in "abc"]
        # the lab's socket and the sockets of the children forked ahead, as
        # they were before each request (the server closes one per request)
        servers: set[str] = set()
        for child in children:
            servers |= _socket_inodes(server._process.pid)
            child.start()
            assert child.run_until_parked_or_exit(60) is not None, child.trace
        assert len(servers) >= 4
        for child in children:
            assert child.process is not None and child.process.forked
            pid = child.process.pid
            assert _socket_inodes(pid) & servers == set()
            assert os.getpgid(pid) == pid  # its own process group
        for child in children:
            child.kill()
            assert child.wait(60).returncode == -signal.SIGKILL
    finally:
        for child in children:
            child.close()
        server.close()


def test_the_server_starts_with_the_environment_it_gives_children() -> None:
    # A child then changes only its probe's variables (enter_child), instead
    # of clearing and refilling the lab's whole environment.
    server = ForkServer()
    try:
        # Read once the new program is in place: during its exec, /proc
        # shows an empty environment (seen once under load).
        deadline = time.monotonic() + 60
        while not (initial := psutil.Process(server._process.pid).environ()):
            assert time.monotonic() < deadline, "the server never showed an environment"
            time.sleep(0.01)
    finally:
        server.close()
    assert initial == trimmed_environment()


def test_children_forked_ahead_leave_with_the_server(tmp_path: Path) -> None:
    server = ForkServer()
    with _parked_child(server, tmp_path / "a") as child:
        assert child.run_until_parked_or_exit(60) is not None
        assert child.process is not None
        waiting = [p for p in psutil.Process(server.pid).children() if p.pid != child.process.pid]
        assert waiting, "the server keeps children forked ahead"
        child.kill()
        child.wait(60)
    server.close()
    assert server._process.returncode == 0
    for process in waiting:
        assert not process.is_running() or process.status() == psutil.STATUS_ZOMBIE


def test_a_child_that_died_while_waiting_is_replaced(tmp_path: Path) -> None:
    server = ForkServer()
    try:
        for index in range(3):
            # SIGKILL every child the server has forked ahead: the next
            # request must still get a live child.
            for process in psutil.Process(server._process.pid).children():
                process.kill()
                process.wait(10)
            with _parked_child(server, tmp_path / str(index)) as child:
                assert child.run_until_parked_or_exit(60) is not None, child.trace
                child.kill()
                child.wait(60)
    finally:
        server.close()


def test_a_scenario_changed_after_the_fork_is_read_again(tmp_path: Path) -> None:
    # Children are forked ahead with the scenarios the server has parsed;
    # one handed a scenario whose file changed since must read the new one.
    path = tmp_path / "changing.toml"
    text = (SCENARIOS / "tiny-tool.toml").read_text()
    path.write_text(text)
    options = _options(tmp_path / "work", "fork")
    first = run_reference(str(path), load_scenario(str(path)), options)
    assert first.returncode == 0, first.stderr
    time.sleep(0.01)  # a different mtime even on coarse clocks
    path.write_text(text.replace('text = "paid"', 'text = "paid in full, thank you"'))
    second = run_reference(str(path), load_scenario(str(path)), options)
    assert second.returncode == 0, second.stderr
    assert b"thank you" not in first.log_bytes
    assert b"paid in full, thank you" in second.log_bytes


def test_the_servers_cpu_time_counts_the_children_it_reaped(tmp_path: Path) -> None:
    # The benchmarks add it to the lab's own CPU time, so the children's
    # work must be in it once the server has reaped them (psutil counts in
    # clock ticks: ten children make sure there is something to count).
    server = ForkServer(ahead=0)
    try:
        before = server.cpu_seconds()
        for index in range(10):
            with _parked_child(server, tmp_path / str(index)) as child:
                assert child.run_until_parked_or_exit(60) is not None
                child.kill()
                child.wait(60)
        after = server.cpu_seconds()
        reaped = psutil.Process(server._process.pid).cpu_times()
        assert reaped.children_user + reaped.children_system > 0
        assert after - before >= reaped.children_user + reaped.children_system
    finally:
        server.close()
    assert server.cpu_seconds() == 0.0


def _minor_faults(pid: int) -> int:
    # /proc/PID/stat: the command is in parentheses; minflt is the 10th field.
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[7])


def _waiting_children_faults(server: ForkServer) -> list[int]:
    """The minor page faults of the children the server keeps forked ahead,
    once each has had its time to warm up (bounded)."""
    deadline = time.monotonic() + 30
    while True:
        children = psutil.Process(server._process.pid).children()
        faults = [_minor_faults(child.pid) for child in children]
        time.sleep(0.5)
        settled = [_minor_faults(child.pid) for child in children]
        if (len(children) >= 2 and faults == settled) or time.monotonic() > deadline:
            return settled


def test_cold_children_wait_without_warming_up(tmp_path: Path) -> None:
    # The warm-up runs the argument parser and an event loop: hundreds of
    # copy-on-write faults in a child that is still waiting.
    warm, cold = ForkServer(warm=True), ForkServer(warm=False)
    try:
        warm_faults = _waiting_children_faults(warm)
        cold_faults = _waiting_children_faults(cold)
        assert len(warm_faults) >= 2 and len(cold_faults) >= 2
        assert max(cold_faults) * 2 < min(warm_faults), (cold_faults, warm_faults)
        # A cold child still runs the case it is handed.
        with _parked_child(cold, tmp_path / "a") as child:
            assert child.run_until_parked_or_exit(60) is not None, child.trace
            child.kill()
            assert child.wait(60).returncode == -signal.SIGKILL
    finally:
        warm.close()
        cold.close()


def test_an_exploration_with_more_jobs_than_cpus_forks_cold_children(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A spy, not a mock: the real request runs; it notes which server forked.
    spawned_by: list[bool] = []
    request = ForkServer.request

    def noting(self: ForkServer, *args: Any, **kwargs: Any) -> Any:
        spawned_by.append(self.warm)
        return request(self, *args, **kwargs)

    monkeypatch.setattr(ForkServer, "request", noting)
    scenarios = load_scenarios([SCENARIOS / "tiny.toml"])
    for jobs, warm in ((1, True), (usable_cpus(), True), (usable_cpus() + 1, False)):
        spawned_by.clear()
        result = explore(scenarios, _options(tmp_path / str(jobs), "fork"), jobs=jobs)
        assert result.passed
        assert spawned_by and set(spawned_by) == {warm}
