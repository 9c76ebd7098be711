# Shared test helpers: build scenarios from TOML snippets and assemble the
# reference runtime's parts in-process for unit tests (real files, real fsync);
# and the hostile-input corpus's one way of running faultlab (tests/hostile):
# the real CLI in a subprocess, with a time bound, a memory bound (RLIMIT_AS in
# the child), a file-size bound (RLIMIT_FSIZE: no file it writes may pass the
# documented caps) and a marker in its environment, so every process it leaves
# behind is found.  (One conftest: a second one elsewhere would shadow this
# module's name for the tests that import from it.)
from __future__ import annotations

import contextlib
import fcntl
import os
import resource
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import psutil
import pytest

from faultlab.lab.process.tree import leftovers
from faultlab.runtime.agent import Agent
from faultlab.runtime.backends import JsonlBackend
from faultlab.runtime.checkpoints import policy_plugin
from faultlab.runtime.host import Disposer, Host
from faultlab.runtime.ledger import WorldLedger
from faultlab.runtime.model import ScriptedModel
from faultlab.runtime.persistence import PersistenceCoordinator
from faultlab.runtime.session import SessionLog
from faultlab.runtime.tools import ScriptedTools
from faultlab.scenario import Scenario, parse_scenario

REPO = Path(__file__).resolve().parent.parent
SCENARIOS = REPO / "scenarios"
# The cache of traced runs across runs (faultlab/lab/process/tracecache.py)
# is off in tests, and in every faultlab they start, unless a test names a
# folder (tests/integration/test_trace_cache.py): a test of how a run is
# traced must see it traced, not served from another test's entry.
os.environ["FAULTLAB_TRACE_CACHE"] = "off"


@pytest.hookimpl(optionalhook=True)  # a run without xdist has no such hook
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: one worker more than there are CPUs.  Much of the suite
    waits on real agents and children (an agent's resolver retrying, a
    timeout running out, a child held at a boundary); measured on 2 cores,
    two workers kept the CPUs 85% busy, so a third runs in those gaps."""
    return (len(os.sched_getaffinity(0)) or 1) + 1


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Start the `heavy` tests first, spread over the xdist workers: xdist
    gives each worker a first chunk of consecutive tests (a quarter of its
    share), so each heavy test goes to the head of a worker's chunk, the
    longest first to the least loaded (`heavy(seconds)`: measured with
    --durations).  Left where they are, a minute-long test picked up last
    keeps one worker busy while the others have nothing left to do.  Every
    worker computes the same order (xdist requires identical collections)."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    heavy = [item for item in items if item.get_closest_marker("heavy")]
    if workers < 2 or not heavy:
        return

    def seconds(item: pytest.Item) -> float:
        mark = item.get_closest_marker("heavy")
        return float(mark.args[0]) if mark is not None and mark.args else 60.0

    shares: list[list[pytest.Item]] = [[] for _ in range(workers)]
    loads = [0.0] * workers
    for item in sorted(heavy, key=seconds, reverse=True):
        least = loads.index(min(loads))
        shares[least].append(item)
        loads[least] += seconds(item)
    light = [item for item in items if not item.get_closest_marker("heavy")]
    chunk = max(2, len(items) // workers // 4)
    ordered: list[pytest.Item] = []
    for share in shares:
        fill = max(0, chunk - len(share))
        ordered += share + light[:fill]
        light = light[fill:]
    items[:] = ordered + light


def once_per_run(factory: pytest.TempPathFactory, name: str,
                 build: Callable[[Path], Any]) -> Any:  # fmt: skip
    """The value of an expensive module fixture, built once per test run
    however many xdist workers need it: the first worker to get here builds
    it (in a directory it is given) under an flock in the run's shared temp
    directory and keeps it as JSON; the others wait for it and read it.
    (xdist's `loadgroup` would put such tests on one worker, but it marks
    them through node ids, which pytest 9 no longer takes.)"""
    root = factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # every worker's base temp is under the run's
    where, value = root / f"once-{name}", root / f"once-{name}.json"
    with open(root / f"once-{name}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if value.exists():
            return orjson.loads(value.read_bytes())
        where.mkdir(exist_ok=True)
        built = build(where)
        value.write_bytes(orjson.dumps(built))
        return built


def scenario_from(toml: str, *, name: str = "t") -> Scenario:
    return parse_scenario(f'name = "{name}"\n' + textwrap.dedent(toml), path=f"<{name}>")


@dataclass
class Runtime:
    """The runtime's parts, wired like SessionRunner but open to inspection."""

    scenario: Scenario
    log: SessionLog
    backend: JsonlBackend
    coordinator: PersistenceCoordinator
    host: Host
    model: ScriptedModel
    tools: ScriptedTools
    agent: Agent
    policy_disposer: Disposer | None

    async def run_turn(self, index: int = 0) -> str:
        turn = self.scenario.turns[index]
        return await self.agent.run_turn(turn.user, script_turn=index, script_step=0)

    def close(self) -> None:
        self.backend.close()
        self.tools.ledger.close()


RuntimeFactory = Callable[..., Runtime]


@pytest.fixture
def make_runtime(tmp_path: Path) -> Iterator[RuntimeFactory]:
    made: list[Runtime] = []

    def make(
        scenario: Scenario,
        *,
        policy: str | None = None,
        before_policy: Callable[[Host], object] | None = None,
        directory: Path | None = None,
    ) -> Runtime:
        where = directory or tmp_path / f"session{len(made)}"
        backend = JsonlBackend(where)
        loaded = backend.open(session_id="test", create=True, resume=True)
        log = SessionLog(loaded.session_id, loaded.events)
        coordinator = PersistenceCoordinator(log, backend)
        host = Host()
        if before_policy is not None:
            before_policy(host)
        dispose = host.load(policy_plugin(policy or scenario.policy, coordinator))
        model = ScriptedModel(scenario)
        tools = ScriptedTools(scenario, WorldLedger(where / "world-ledger.jsonl"))
        agent = Agent(
            log=log,
            coordinator=coordinator,
            host=host,
            model=model,
            tools=tools,
            pool_size=scenario.max_parallel_tools,
        )
        runtime = Runtime(scenario, log, backend, coordinator, host, model, tools, agent, dispose)
        made.append(runtime)
        return runtime

    yield make
    for runtime in made:
        runtime.close()


# -- the hostile-input corpus (tests/hostile) ------------------------------
MEMORY_BOUND = 1 << 30  # bytes of address space a faultlab command may take
# Bytes one file it writes may hold: above every cap of docs/cli.md "Limits"
# (256 MiB a copied file), far below what an unbounded copy of /dev/zero or a
# 3 GiB session file would write (SIGXFSZ would then end the command).
FILE_BOUND = 320 << 20
TIME_BOUND = 60.0  # seconds: generous, the machine is shared; a hang is far longer


@dataclass(frozen=True)
class Outcome:
    """What one faultlab command did."""

    code: int
    stdout: str
    stderr: str
    left: tuple[str, ...]  # command lines of processes it left running

    def one_line_error(self) -> str:
        """The single error line a user's mistake must produce (asserted here)."""
        assert "Traceback" not in self.stderr, self.stderr
        lines = [line for line in self.stderr.splitlines() if line.strip()]
        assert len(lines) == 1, self.stderr
        return lines[0]


def _bounded() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BOUND, MEMORY_BOUND))
    resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_BOUND, FILE_BOUND))


@pytest.fixture
def faultlab_cli(tmp_path: Path) -> Iterator[Callable[..., Outcome]]:
    """Run `python -m faultlab ARGS...` in `cwd` (default: the test's tmp_path)."""
    marker = f"fl-hostile-{uuid.uuid4().hex}"

    def run(
        *args: str,
        cwd: Path | None = None,
        stdin: bytes = b"",
        timeout: float = TIME_BOUND,
        memory: bool = True,
        env: dict[str, str] | None = None,
    ) -> Outcome:
        command: Sequence[str] = [sys.executable, "-m", "faultlab", *args]
        environment = {**os.environ, "PYTHONPATH": str(REPO), "FAULTLAB_TEST_MARKER": marker}
        environment.update(env or {})
        done = subprocess.run(
            command, cwd=cwd or tmp_path, input=stdin, capture_output=True,
            timeout=timeout, env=environment, preexec_fn=_bounded if memory else None,
            check=False,
        )  # fmt: skip
        left = tuple(" ".join(proc.cmdline()) for proc in _settled(marker))
        return Outcome(
            done.returncode,
            done.stdout.decode("utf-8", "replace"),
            done.stderr.decode("utf-8", "replace"),
            left,
        )

    # The lab passes a target a trimmed environment (no marker): a test
    # puts `run.marker` on a target's command line to have it found.
    run.marker = marker  # type: ignore[attr-defined]
    yield run
    for proc in leftovers(marker):
        with contextlib.suppress(psutil.Error):
            proc.suspend()
            proc.kill()


def _settled(marker: str) -> list[psutil.Process]:
    """What is still alive of the command a moment after it exited (a kill in
    flight gets a bounded grace)."""
    deadline = time.monotonic() + 5.0
    while (left := leftovers(marker)) and time.monotonic() < deadline:
        time.sleep(0.05)
    result = []
    for proc in left:
        with contextlib.suppress(psutil.Error):
            proc.cmdline()
            result.append(proc)
    return result


@dataclass
class Started:
    """A faultlab command still running (to be signalled), under the same
    bounds and marker as `faultlab_cli`."""

    process: subprocess.Popen[bytes]
    marker: str
    stderr_path: Path

    def wait_for(self, text: str, timeout: float = TIME_BOUND) -> str:
        """Wait until its stderr shows `text` (or it exits); return the stderr so far."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            seen = self.stderr_path.read_text("utf-8", "replace")
            if text in seen or self.process.poll() is not None:
                return seen
            time.sleep(0.05)
        return self.stderr_path.read_text("utf-8", "replace")

    def finish(self, timeout: float = TIME_BOUND) -> Outcome:
        """Wait for it to exit; what it did and left behind."""
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise
        stdout = self.process.stdout.read() if self.process.stdout else b""
        left = tuple(" ".join(proc.cmdline()) for proc in _settled(self.marker))
        return Outcome(
            self.process.returncode,
            stdout.decode("utf-8", "replace"),
            self.stderr_path.read_text("utf-8", "replace"),
            left,
        )


@pytest.fixture
def faultlab_started(tmp_path: Path) -> Iterator[Callable[..., Started]]:
    """Start `python -m faultlab ARGS...` in the background (stderr to a
    file, read with `wait_for`); `ignore_sigint` starts it the way a
    non-interactive shell starts a background job."""
    marker = f"fl-hostile-{uuid.uuid4().hex}"
    started: list[Started] = []

    def start(
        *args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
        ignore_sigint: bool = False,
    ) -> Started:  # fmt: skip
        environment = {**os.environ, "PYTHONPATH": str(REPO), "FAULTLAB_TEST_MARKER": marker}
        environment.update(env or {})
        stderr_path = tmp_path / f"stderr-{len(started)}.txt"

        def prepare() -> None:
            _bounded()
            if ignore_sigint:
                signal.signal(signal.SIGINT, signal.SIG_IGN)

        with open(stderr_path, "wb") as stderr:
            process = subprocess.Popen(
                [sys.executable, "-m", "faultlab", *args], cwd=cwd or tmp_path,
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr,
                env=environment, preexec_fn=prepare,
            )  # fmt: skip
        started.append(Started(process, marker, stderr_path))
        return started[-1]

    start.marker = marker  # type: ignore[attr-defined]
    yield start
    for each in started:
        if each.process.poll() is None:
            each.process.kill()
            each.process.wait()
        if each.process.stdout:
            each.process.stdout.close()
    for proc in leftovers(marker):
        with contextlib.suppress(psutil.Error):
            proc.suspend()
            proc.kill()


@pytest.fixture
def daemons(tmp_path: Path) -> Iterator[Path]:
    """A folder for the daemons of tests/fixtures/daemons.py; any left
    running at the end are killed."""
    from tests.fixtures.daemons import alive

    folder = tmp_path / "daemons"
    folder.mkdir()
    yield folder
    for pid in alive(folder):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
