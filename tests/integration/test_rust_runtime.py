# faultlab's oracle is right about runtimes its authors did not write (issue
# 30, item 2): a small agent runtime in Rust, written from faultlab's
# documents alone (tests/runtimes/rust/README.md), passes every case of every
# fault with the system calls as ground truth, and the facts it reports pass
# too; each of its deliberate bugs (`--bug NAME`) is caught with its code.
# Its I/O is another language's: writev and fdatasync from a pool of OS
# threads, pwrite, directory fsyncs with sync_all.  The full measurement
# (every bundled scenario, both ground truths) is benchmarks/rust_runtime.py.
from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

import pytest

from faultlab.lab.faults.table import CLASSIC_FAULTS
from tests.conftest import once_per_run
from tests.fixtures.foreign import explore_target, failing

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "tests" / "runtimes" / "rust"
PAYMENT = str(ROOT / "scenarios" / "payment.toml")
PARALLEL = str(ROOT / "scenarios" / "parallel-reads.toml")
ALL = {name for name, fault in CLASSIC_FAULTS.items() if fault.in_all}

pytestmark = [
    pytest.mark.realprocess,
    pytest.mark.skipif(
        shutil.which("rustc") is None,
        reason="needs rustc to build tests/runtimes/rust (Debian package `rustc`, 1.63 or later)",
    ),
    pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace (.ci/run installs it)"),
]


def _digest() -> str:
    """The sources and the compiler: a new digest builds a new binary."""
    sha = hashlib.sha256()
    for path in sorted(SOURCE.glob("*.rs")):
        sha.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    version = subprocess.run(["rustc", "--version"], capture_output=True, timeout=60, check=True)
    sha.update(version.stdout)
    return sha.hexdigest()[:16]


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The runtime, compiled once per test run (and per source digest)."""

    def build(where: Path) -> str:
        binary = where / "runtime"
        done = subprocess.run(
            ["rustc", "-O", "--edition", "2021", str(SOURCE / "main.rs"), "-o", str(binary)],
            capture_output=True, text=True, timeout=900, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        return str(binary)

    return str(once_per_run(tmp_path_factory, f"rust-runtime-{_digest()}", build))


def explore(
    target: str, scenarios: list[str], faults: str, tmp_path: Path, *more: str,
    truth: str = "syscalls",
) -> tuple[int, list[dict[str, object]]]:  # fmt: skip
    return explore_target(tmp_path, target, *scenarios, "--faults", faults, *more, truth=truth)


def judged(cases: list[dict[str, object]]) -> set[object]:
    return {c["fault"] for c in cases if c["verdict"] == "pass" and c["fault"] != "reference"}


@pytest.mark.heavy(27)
def test_the_correct_runtime_passes_every_case_of_every_fault(runtime: str, tmp_path: Path) -> None:
    # double-sigkill, in `all` since issue 30, with a smaller bound than the
    # default: its cases are the bulk of the run's exec'd children.
    code, cases = explore(runtime, [PAYMENT], "all", tmp_path, "--max-double-cases", "6")
    assert failing(cases) == [] and code == 0
    assert judged(cases) == ALL  # every fault of `all` ran and held: none vacuously


def test_parallel_tools_and_their_checkpoints_pass_every_fault(
    runtime: str, tmp_path: Path
) -> None:
    # Four parallel-safe calls share the pool: one occurrence of each point
    # where the pool logs, checkpoints (flush/written#2 is the calls' shared
    # checkpoint), starts and returns them, under every fault that applies.
    selected = "tool/logged#2 or flush/written#2 or tool/durable#3 or tool/returned#2"
    code, cases = explore(runtime, [PARALLEL], "all", tmp_path, "-k", selected,
                          "--max-double-cases", "2")  # fmt: skip
    assert failing(cases) == [] and code == 0
    # corrupt-committed is at turn/durable only; double-sigkill's few pairs
    # (bounded: its planning runs before -k selects) need not be selected.
    assert judged(cases) - {"double-sigkill"} == ALL - {"corrupt-committed", "double-sigkill"}


def test_the_facts_it_reports_pass_as_ground_truth(runtime: str, tmp_path: Path) -> None:
    code, cases = explore(runtime, [PAYMENT], "power-loss,torn-write", tmp_path, truth="facts")
    assert failing(cases) == [] and code == 0
    assert judged(cases) == {"power-loss", "torn-write"}


# (bug, fault, the catching case, the code it must be caught with)
BUGS = [
    ("fsync-wrong-file", "power-loss", "flush/written#2", "FSYNC_WRONG_FILE"),
    ("no-tool-checkpoint", "sigkill", "tool/effect#1", "TOOL_INTENT_LOST"),
    ("repair-all-not-started", "sigkill", "tool/durable#1", "REPAIR_MISCLASSIFIED"),
    ("cut-not-truncated", "torn-write", "flush/written#3", "CORRUPT_COMMITTED_LOG"),
    ("no-writer-lock", "second-writer", "tool/durable#1", "SEQ_FORK"),
    ("dies-on-sigterm", "sigterm", "model/chunk#1", "GRACEFUL_CLOSE_MISSING"),
    ("trusts-failed-fsync", "fsync-error", "request/logged#1", "FSYNC_FAILURE_TRUSTED"),
    ("ignores-failed-flush", "io-error", "request/logged#1", "DISPATCH_AFTER_FAILED_CHECKPOINT"),
]


@pytest.mark.parametrize(("bug", "fault", "at", "code"), BUGS, ids=[b[0] for b in BUGS])
def test_each_deliberate_bug_is_caught_with_its_code(
    runtime: str, tmp_path: Path, bug: str, fault: str, at: str, code: str
) -> None:
    status, cases = explore(f"{runtime} --bug {bug}", [PAYMENT], fault, tmp_path, "-k", at)
    hit = [c for c in cases if c["fault"] == fault]
    assert len(hit) == 1, [c["id"] for c in cases]  # the one case, and it ran
    assert hit[0]["verdict"] == "fail" and code in hit[0]["codes"], hit[0]
    assert status == 1
