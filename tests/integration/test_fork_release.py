# A forked child that finished is let go before it is reaped: its last act
# (faultlab.runtime.forkchild.release) closes every fd but the probe pipes
# and reports its exit code, and the lab goes on while the kernel tears the
# process down; `Child.settle` later takes the real status from the reaper.
# A crash child SIGKILLed while parked is let go the same way
# (`Child.kill_and_let_go`): the child that repairs its session is handed a
# pidfd of it and starts only once it is gone.
# Real processes throughout: the runtime forked by a real server, and, where
# a child has to lie about its exit, an exec'd Python that writes the report.
from __future__ import annotations

import fcntl
import os
import select
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from faultlab import lab
from faultlab.lab.campaigns.explore import COVERAGE, plan_cases, run_one
from faultlab.lab.process.forkserver import ForkServer, ForkServerError
from faultlab.lab.process.live import live
from faultlab.lab.process.reference import LabOptions, run_reference
from faultlab.lab.process.spawn import Child, ChildExit
from faultlab.lab.process.target import Mode
from faultlab.probe import RELEASED
from faultlab.runtime.backends.jsonl import LOCK_NAME
from faultlab.scenario import load_scenario

pytestmark = pytest.mark.realprocess

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"


@pytest.fixture(scope="module")
def server() -> Iterator[ForkServer]:
    server = ForkServer()
    yield server
    server.close()


def _take_and_drop_lock(path: Path) -> None:
    """Take the flock on `path` without waiting (raises if anyone holds it)."""
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    finally:
        os.close(fd)


def _forked_run(server: ForkServer, where: Path) -> Child:
    argv = [str(SCENARIOS / "tiny-tool.toml"), "--session-dir", str(where / "session")]
    where.mkdir(parents=True)
    return Child(
        [*lab.make_target().command, *argv], stderr_path=where / "child.stderr",
        cwd=str(where), server=server, server_argv=argv,
    )  # fmt: skip


def test_a_finished_forked_child_is_let_go_before_it_is_reaped(
    server: ForkServer, tmp_path: Path
) -> None:
    # Several times: the lab closing its pipe ends must never make the child
    # leave with another code (its probe reads the replies on another
    # thread, so the reply pipe stays open until the child is settled).
    for index in range(20):
        where = tmp_path / str(index)
        with _forked_run(server, where) as child:
            assert child.run_until_parked_or_exit(60) is None
            reported = child.wait(60, early=True)
        assert reported.returncode == 0, reported.stderr
        assert child.process in live()  # let go, not reaped by the lab yet
        assert all(RELEASED not in message for message in child.trace)
        assert any(message.get("boundary") == "turn/durable" for message in child.trace)
        # Whether or not the kernel is done with the process, its writer
        # lock is free: the next child may open the session now.
        _take_and_drop_lock(where / "session" / LOCK_NAME)
        settled = child.settle(60)
        assert settled.returncode == 0
        assert child.process not in live()
        assert child.settle(60) is settled


def test_a_child_that_is_not_let_go_is_reaped_as_before(server: ForkServer, tmp_path: Path) -> None:
    with _forked_run(server, tmp_path / "a") as child:
        assert child.run_until_parked_or_exit(60) is None
        status = child.wait(60)  # not early: the lab waits for the reaper
    assert status.returncode == 0
    assert child.process not in live()
    assert child.settle(60) is status


def _writes_its_own_report(
    tmp_path: Path, reports: list[dict[str, object]], code: int, after: int | None = None
) -> Child:
    """An exec'd child that writes `reports` on the probe's report pipe, closes
    it and exits with `code` (started once the process `after` is gone)."""
    lines = b"".join(orjson.dumps(report, option=orjson.OPT_APPEND_NEWLINE) for report in reports)
    script = textwrap.dedent(
        f"""
        import os, sys
        report = int(os.environ["FAULTLAB_PROBE_FDS"].split(",")[0])
        os.write(report, {lines!r})
        os.close(report)
        sys.exit({code})
        """
    )
    stderr = tmp_path / "child.stderr"
    child = Child([sys.executable, "-c", script], stderr_path=stderr, after=after)
    child.start()
    return child


def test_the_reaped_status_replaces_the_reported_one(server: ForkServer, tmp_path: Path) -> None:
    child = _writes_its_own_report(tmp_path, [{RELEASED: 0}], 5)
    # The lab believes a release only from the fork server's children; this
    # one is exec'd so that it can report one code and exit with another.
    child.server = server
    try:
        assert child.run_until_parked_or_exit(60) is None
        assert child.wait(60, early=True).returncode == 0
        assert child.settle(60).returncode == 5
    finally:
        child.close()


@pytest.mark.parametrize(
    ("reports", "forked"),
    [
        ([{RELEASED: 0}, {"boundary": "turn/started"}], True),  # not the last report
        ([{RELEASED: 0, "more": 1}], True),  # not the release's shape
        ([{RELEASED: "0"}], True),
        ([{RELEASED: 0}], False),  # an exec'd target's report is part of its trace
    ],
)
def test_anything_but_a_forked_childs_last_release_is_waited_for(
    server: ForkServer, tmp_path: Path, reports: list[dict[str, object]], forked: bool
) -> None:
    child = _writes_its_own_report(tmp_path, reports, 5)
    if forked:
        child.server = server
    try:
        assert child.run_until_parked_or_exit(60) is None
        assert child.wait(60, early=True).returncode == 5
        assert child.process not in live()
    finally:
        child.close()


def test_release_closes_every_fd_but_the_probe_pipes(tmp_path: Path) -> None:
    # A fresh interpreter runs `release` with a locked file and other fds
    # open, then waits on the reply pipe: its open fds are what is left.
    report_r, report_w = os.pipe()
    reply_r, reply_w = os.pipe()
    script = textwrap.dedent(
        f"""
        import fcntl, os
        from faultlab.runtime.forkchild import release
        locked = os.open({str(tmp_path / "lock")!r}, os.O_RDWR | os.O_CREAT)
        fcntl.flock(locked, fcntl.LOCK_EX)
        extra = os.open(os.devnull, os.O_RDONLY)
        release({report_w}, {reply_r}, 7)
        os.read({reply_r}, 1)  # until the test closes its end
        os._exit(0)
        """
    )
    process = subprocess.Popen(
        [sys.executable, "-c", script], pass_fds=(report_w, reply_r), stderr=subprocess.PIPE
    )
    os.close(report_w)
    os.close(reply_r)
    try:
        with os.fdopen(report_r, "rb") as reports:
            assert orjson.loads(reports.read()) == {RELEASED: 7}  # then EOF: it closed the pipe
        assert sorted(int(fd) for fd in os.listdir(f"/proc/{process.pid}/fd")) == [reply_r]
        _take_and_drop_lock(tmp_path / "lock")  # its lock went with its fds
    finally:
        os.close(reply_w)
        _out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err


def test_a_case_is_judged_on_the_reaped_status(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Nothing runs between a forked child's report and its os._exit, so no
    # real child can be made to exit with another code than it reported:
    # here the reaper's answer is replaced (a child SIGKILLed in that
    # window), and the case must be judged on it, not on the report.
    path = str(SCENARIOS / "tiny-tool.toml")
    options = LabOptions(lab.make_target(), tmp_path, 60.0, "fork")
    reference = run_reference(path, load_scenario(path), options)
    case = next(c for c in plan_cases(reference) if c.occurrence != COVERAGE)
    assert run_one(case, reference, options).verdict == "pass"

    settle = Child.settle

    def killed_while_exiting(self: Child, timeout: float) -> ChildExit:
        reported = settle(self, timeout)
        return ChildExit(-signal.SIGKILL, reported.stderr)

    monkeypatch.setattr(Child, "settle", killed_while_exiting)
    result = run_one(case, reference, options)
    assert result.verdict == "fail"
    assert "RESUME_FAILED" in {violation.code for violation in result.violations}


def _target_child(
    server: ForkServer, where: Path, mode: Mode, name: str, armed: str | None = None
) -> Child:
    """A forked reference runtime on tiny-tool's session in `where`, as the lab runs it."""
    target = lab.make_target()
    argv = target.argv(str(SCENARIOS / "tiny-tool.toml"), where / "session", mode)
    where.mkdir(parents=True, exist_ok=True)
    return Child(
        argv, stderr_path=where / f"{name}.stderr", armed=armed, cwd=str(where), server=server,
        server_argv=argv[len(target.command) :],
    )  # fmt: skip


def _gone(pidfd: int, timeout: float) -> bool:
    # The test's own wait, not `faultlab.probe.process_gone`: the server's
    # child waits with that one, and a bug in it must not hide here.
    poller = select.poll()
    poller.register(pidfd, select.POLLIN)
    return bool(poller.poll(int(timeout * 1000)))


def test_a_killed_crash_child_is_let_go_and_settled_as_killed(
    server: ForkServer, tmp_path: Path
) -> None:
    crash = _target_child(server, tmp_path, "run", "crash", armed="tool/durable#1")
    with crash:
        assert crash.run_until_parked_or_exit(60) is not None, crash.trace
        pidfd = crash.kill_and_let_go()
        assert pidfd is not None
    try:
        assert crash.process in live()  # let go, not reaped by the lab yet
        assert crash.kill_and_let_go() is None  # once only
        assert _gone(pidfd, 60)
        # Gone means its fds are closed: the writer lock is free.
        _take_and_drop_lock(tmp_path / "session" / LOCK_NAME)
        assert crash.settle(60).returncode == -signal.SIGKILL
        assert crash.process not in live()
    finally:
        os.close(pidfd)


def test_a_child_handed_a_pidfd_runs_only_once_that_process_is_gone(
    server: ForkServer, tmp_path: Path
) -> None:
    # The crash child stays parked, holding the session's writer lock.
    crash = _target_child(server, tmp_path, "run", "crash", armed="tool/durable#1")
    with crash:
        assert crash.run_until_parked_or_exit(60) is not None, crash.trace
        # Without waiting, a repair is refused: the session has a live writer.
        with _target_child(server, tmp_path, "repair", "refused") as refused:
            assert refused.run_until_parked_or_exit(60) is None
            status = refused.wait(60)
        assert status.returncode != 0
        assert "refusing to open a second writer" in status.stderr
        assert crash.process is not None
        pidfd = os.pidfd_open(crash.process.pid)
        try:
            repair = _target_child(server, tmp_path, "repair", "repair")
            repair.after = pidfd
            with repair:
                # Nothing from the repair child while the crash child lives.
                assert not select.select([repair._report_fd], [], [], 0.3)[0]
                assert not _gone(pidfd, 0)
                crash.kill()
                assert repair.run_until_parked_or_exit(60) is None
                repaired = repair.wait(60)
        finally:
            os.close(pidfd)
        assert crash.wait(60).returncode == -signal.SIGKILL
    assert repaired.returncode == 0, repaired.stderr
    assert any("repair" in str(message) for message in repair.trace), repair.trace


def test_a_request_that_says_after_but_brings_no_pidfd_is_refused(server: ForkServer) -> None:
    report_r, report_w = os.pipe()
    try:
        with pytest.raises(ForkServerError, match="expected 4 fds"):
            # Two fds and the pidfd: one short of the server's three and the pidfd.
            server.request(["x.toml"], env={}, fds=(report_r, report_w), after=report_w)
    finally:
        os.close(report_r)
        os.close(report_w)


@pytest.mark.parametrize(("backend", "let_go"), [("jsonl", True), ("sqlite", False)])
def test_a_sigkill_case_lets_its_crash_child_go_on_jsonl_only(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, backend: str, let_go: bool
) -> None:
    let_go_results: list[int | None] = []
    real = Child.kill_and_let_go

    def recorded(self: Child) -> int | None:
        pidfd = real(self)
        let_go_results.append(pidfd)
        return pidfd

    monkeypatch.setattr(Child, "kill_and_let_go", recorded)
    # The registry is per process: an xdist worker's earlier tests may have
    # left entries; this test answers for its own children only.
    before = set(map(id, live()))
    path = str(SCENARIOS / "tiny-tool.toml")
    options = LabOptions(lab.make_target(backend=backend), tmp_path, 60.0, "fork")
    reference = run_reference(path, load_scenario(path), options)
    cases = [c for c in plan_cases(reference) if c.occurrence != COVERAGE][:3]
    for case in cases:
        result = run_one(case, reference, options)
        assert result.verdict == "pass", result
    assert len(let_go_results) == (len(cases) if let_go else 0)
    assert all(pidfd is not None for pidfd in let_go_results)
    assert not [p for p in live() if id(p) not in before]  # every crash child let go settled


def test_an_execd_child_handed_a_pidfd_starts_once_that_process_is_gone(tmp_path: Path) -> None:
    # No fork server to wait for it: the lab waits before it execs.
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.5)"])
    pidfd = os.pidfd_open(holder.pid)
    try:
        child = _writes_its_own_report(tmp_path, [{"boundary": "turn/started"}], 0, after=pidfd)
        try:
            assert holder.poll() is not None  # gone before the child was started
            assert child.run_until_parked_or_exit(60) is None
            assert child.wait(60).returncode == 0
        finally:
            child.close()
    finally:
        os.close(pidfd)
        holder.wait(60)
