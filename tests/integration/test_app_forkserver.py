# The app fork server (faultlab/lab/apps/forkserver.py): its children are
# real processes that exit, fail and die as exec'd ones do (a stand-in child
# module, tests/fixtures/appchild/toychild.py, checks that without a
# framework), `--app` cases fork from it by default, and the LangGraph
# example gets the same verdicts forked as exec'd.
from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import orjson
import psutil
import pytest

from faultlab.lab.apps.fork import APP_SERVER, app_server, fork_app
from faultlab.lab.errors import LabUsageError
from faultlab.lab.process.forkserver import ForkServer
from faultlab.lab.process.tree import ContainedProcess
from tests.fixtures.daemons import alive, started

pytestmark = pytest.mark.realprocess

REPO = Path(__file__).resolve().parents[2]
TOY = "tests.fixtures.appchild.toychild"
# Children are forked into PID namespaces of their own where allowed (root).
PIDNS = os.geteuid() == 0 and os.environ.get("FAULTLAB_PIDNS") != "0"


@pytest.fixture
def toy() -> Iterator[ForkServer]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    server = ForkServer(APP_SERVER, ahead=0, arguments=(TOY, "tests.fixtures.appchild.preloaded:x"),
                        env=env, cwd=str(REPO))  # fmt: skip
    try:
        yield server
    finally:
        server.close()



def _start(server: ForkServer, tmp: Path, *argv: str, **env: str) -> ContainedProcess:
    return fork_app(server, argv, cwd=tmp, env={**os.environ, **env},
                    stdout_path=tmp / "out", stderr_path=tmp / "err")  # fmt: skip


def test_a_forked_child_is_the_servers_in_a_session_of_its_own(
    toy: ForkServer, tmp_path: Path
) -> None:
    child = _start(toy, tmp_path, "facts", TOY_VALUE="given")
    assert child.forked
    assert child.wait(30) == 0
    facts = orjson.loads((tmp_path / "out").read_bytes())
    # Forked by the server itself (the lab's view of its pids: /proc/self),
    # in a PID namespace of its own where the kernel allows: there it is
    # its namespace's init, so whatever it starts dies with it.
    assert facts["ppid"] == toy.pid
    assert facts["pid"] == child.pid
    assert facts["own_pid"] == (1 if PIDNS else child.pid)
    assert facts["pgid"] == facts["sid"] == child.pid
    assert facts["cwd"] == str(tmp_path) and facts["env"] == "given"
    assert facts["preloaded"] and facts["threads"] == 1
    assert facts["argv0"].endswith("toychild.py")
    assert facts["fds"][:3] == [0, 1, 2] and len(facts["fds"]) <= 4  # + listdir's own
    assert psutil.Process(toy.pid).num_threads() == 1


def test_exit_codes_and_an_exception_are_reported_as_an_interpreter_would(
    toy: ForkServer, tmp_path: Path
) -> None:
    assert _start(toy, tmp_path, "exit", "7").wait(30) == 7
    assert _start(toy, tmp_path, "raise").wait(30) == 1
    assert "RuntimeError: toy child failed" in (tmp_path / "err").read_text()
    assert _start(toy, tmp_path, "nonsense").wait(30) == 1  # SystemExit(str)
    assert "unknown action nonsense" in (tmp_path / "err").read_text()


def test_a_child_leaves_only_after_its_non_daemon_threads(
    toy: ForkServer, tmp_path: Path
) -> None:
    assert _start(toy, tmp_path, "thread", str(tmp_path / "late")).wait(30) == 0
    assert (tmp_path / "late").read_text() == "written"


def test_kill_tree_sigkills_the_child_and_the_server_reaps_it(
    toy: ForkServer, tmp_path: Path
) -> None:
    child = _start(toy, tmp_path, "sleep")
    assert child.wait(0.3) is None
    assert child.kill_tree() == -9
    assert not psutil.pid_exists(child.pid) or psutil.Process(child.pid).ppid() != toy.pid
    child.close()


def test_the_kill_takes_what_the_child_started_in_its_group(
    toy: ForkServer, tmp_path: Path
) -> None:
    child = _start(toy, tmp_path, "grandchild")
    out = tmp_path / "out"
    for _ in range(1000):  # until the child has printed its helper's pid
        if out.read_bytes().endswith(b"\n"):
            break
        assert child.wait(0.01) is None
    helper = psutil.Process(int(out.read_text()))
    assert helper.ppid() == child.pid
    assert child.kill_tree() == -9
    _gone, alive = psutil.wait_procs([helper], timeout=10)
    assert not alive
    child.close()


@pytest.mark.parametrize("how", ["single", "double"])
@pytest.mark.parametrize("end", ["exit", "kill"])
def test_nothing_a_forked_child_daemonized_outlives_its_case(
    toy: ForkServer, tmp_path: Path, daemons: Path, how: str, end: str
) -> None:
    # A setsid daemon (or a double-forked one) leaves the child's group and
    # session: only a subreaper above the child still finds it.
    folder = daemons
    child = _start(toy, tmp_path, "daemon", str(folder), how, "exit" if end == "exit" else "sleep")
    if end == "exit":
        assert child.wait(30) == 0
    else:
        out = tmp_path / "out"
        for _ in range(3000):  # until the child has started its daemon
            if out.read_bytes().endswith(b"\n"):
                break
            assert child.wait(0.01) is None
        assert child.kill_tree() == -9
    child.close()
    assert started(folder) == 1
    assert alive(folder) == []


def test_a_server_whose_preload_starts_a_thread_refuses_to_fork(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    server = ForkServer(APP_SERVER, ahead=0, arguments=(TOY, "threads:x"), env=env, cwd=str(REPO))
    try:
        with pytest.raises(LabUsageError, match=r"left 2 threads running.*--spawn exec"):
            _start(server, tmp_path, "exit", "0")
    finally:
        server.close()


def test_servers_are_shared_by_child_module_app_module_and_path() -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    one = app_server(TOY, "tests.fixtures.appchild.preloaded:a", cwd=str(REPO), env=env)
    same = app_server(TOY, "tests.fixtures.appchild.preloaded:b", cwd=str(REPO), env=env)
    other = app_server(TOY, "tests.fixtures.appchild.preloaded:a", cwd="/",
                       env=env)  # fmt: skip
    try:
        assert one is same and other is not one
    finally:
        one.close()
        other.close()


# -- the LangGraph example through the drive ------------------------------------

WHOAMI = "langgraph:tests.fixtures.lgapps.whoami:build_graph"
PAYMENT = str(REPO / "scenarios" / "payment.toml")
# A kill in the tool body (invoke(None) charges again) and a failed
# pending-writes write that the next step runs past.
CASES = (("tool/effect#1", "sigkill/resume/sync"), ("checkpoint/writes#2", "io-error/resume/sync"))


def _needs_langgraph() -> None:
    pytest.importorskip("langgraph.checkpoint.sqlite")


def _whoami(path: Path) -> list[dict[str, int]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def _verdicts(spawn: str, tmp: Path) -> list[tuple[str, tuple[str, ...]]]:
    from faultlab.lab.apps import AppOptions, run_app_case, run_app_reference
    from faultlab.lab.oracle.case import Case
    from faultlab.scenario import load_scenario

    options = AppOptions(WHOAMI, tmp / spawn, "sync", ("resume",), spawn=spawn)
    reference = run_app_reference(PAYMENT, load_scenario(PAYMENT), options)
    assert reference.returncode == 0, reference.stderr
    out = []
    for occurrence, fault in CASES:
        result = run_app_case(Case(PAYMENT, occurrence, fault), reference, options)
        out.append((result.verdict, result.codes))
    return out


def test_app_cases_fork_from_the_server_by_default_with_the_verdicts_of_exec(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _needs_langgraph()
    from faultlab.lab.apps import AppOptions

    assert AppOptions(WHOAMI, tmp_path).spawn == "fork"
    monkeypatch.chdir(REPO)  # the child imports the app from the working directory
    forked, execd = tmp_path / "forked.jsonl", tmp_path / "execd.jsonl"
    monkeypatch.setenv("FAULTLAB_TEST_WHOAMI", str(forked))
    fork = _verdicts("fork", tmp_path)
    monkeypatch.setenv("FAULTLAB_TEST_WHOAMI", str(execd))
    assert _verdicts("exec", tmp_path) == fork
    assert fork[0] == ("fail", ("UNKNOWN_OUTCOME_RERUN", "SIDE_EFFECT_DUPLICATED"))
    assert fork[1] == ("fail", ("DISPATCH_AFTER_FAILED_CHECKPOINT",))
    # The reference run and two children per case, each forked by one
    # server, a child of this process that preloaded the app (each child in
    # a PID namespace of its own where allowed); none outlived its case.
    children = _whoami(forked)
    assert len(children) == 5 and len({c["pid"] for c in children}) == 5
    servers = {c["ppid"] for c in children}
    assert len(servers) == 1
    server = psutil.Process(servers.pop())
    assert server.ppid() == os.getpid() and server.num_threads() == 1
    command = server.cmdline()  # python -P -m MODULE FD AHEAD [flat] -- CHILD_MODULE APP
    assert command[1:4] == ["-P", "-m", "faultlab.lab.apps.forkserver"]
    assert command[-3:] == ["--", "faultlab.lab.apps.lgchild", WHOAMI.partition(":")[2]]
    assert not any(psutil.pid_exists(c["pid"]) for c in children)
    assert len(_whoami(execd)) == 5  # exec'd children run in their own pid namespace


DAEMON = "langgraph:tests.fixtures.lgapps.daemon:build"


def test_no_daemon_an_apps_factory_starts_outlives_the_exploration(
    tmp_path: Path, daemons: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The app's factory runs in every child of every case and starts a
    # setsid daemon there; an exec'd child runs under its supervisor (and
    # in a PID namespace), a forked one must be contained the same way.
    _needs_langgraph()
    from faultlab.lab.campaigns.api import explore_app
    from faultlab.lab.campaigns.explore import Shard
    from faultlab.scenario import load_scenario

    monkeypatch.chdir(REPO)
    folder = daemons
    monkeypatch.setenv("FAULTLAB_TEST_DAEMONS", str(folder))
    result = explore_app([(PAYMENT, load_scenario(PAYMENT))], app=DAEMON, workdir=tmp_path,
                         styles=("resume",), shard=Shard(1, 8))  # fmt: skip
    assert len(result.results) >= 3
    assert started(folder) >= 3  # the reference run and a case's two children
    assert alive(folder) == []


def test_a_failing_app_exits_the_same_forked_and_execd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _needs_langgraph()
    from faultlab.lab.apps import AppOptions, run_app_reference
    from faultlab.scenario import load_scenario

    monkeypatch.chdir(REPO)
    monkeypatch.setenv("FAULTLAB_TEST_WHOAMI", str(tmp_path / "whoami.jsonl"))
    monkeypatch.setenv("FAULTLAB_TEST_WHOAMI_FAIL", "1")
    for spawn in ("fork", "exec"):
        options = AppOptions(WHOAMI, tmp_path / spawn, "sync", ("resume",), spawn=spawn)
        # A factory that raises is a bad --app spec: refused, as one line (issue 32).
        with pytest.raises(LabUsageError, match="RuntimeError: whoami: the app failed"):
            run_app_reference(PAYMENT, load_scenario(PAYMENT), options)


def test_the_spawn_option_is_fork_or_exec(tmp_path: Path) -> None:
    from faultlab.lab.apps import AppOptions

    assert AppOptions(WHOAMI, tmp_path).spawn == "fork"
    assert AppOptions(WHOAMI, tmp_path, spawn="exec").spawn == "exec"
    with pytest.raises(LabUsageError, match="spawn 'vfork': one of fork, exec"):
        AppOptions(WHOAMI, tmp_path, spawn="vfork")
