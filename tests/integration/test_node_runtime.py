# The oracle is right about a runtime its authors did not write (issue 30):
# a small agent runtime in plain Node.js (tests/runtimes/node/, written from
# faultlab's documents) passes every fault, in both its I/O modes (sync fs on
# the main thread, pwrite64 on an O_APPEND descriptor; async fs on libuv's
# thread pool), and each of its deliberate bugs is caught with its code.
# A cheap subset: payment.toml and parallel-reads.toml at a few occurrences
# chosen so that every fault runs (the full measurement, every bundled
# scenario under every fault, mode and ground truth, is
# benchmarks/node_runtime.py).  Needs `node` (Node.js 20; the CI image has
# it, `.ci/run` installs the agents with its npm) and strace.
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from faultlab.lab.faults.table import CLASSIC_FAULTS
from tests.fixtures.foreign import explore_target as explore
from tests.fixtures.foreign import failing

ROOT = Path(__file__).resolve().parents[2]
RUNTIME = ROOT / "tests" / "runtimes" / "node" / "runtime.js"
PAYMENT = str(ROOT / "scenarios" / "payment.toml")
PARALLEL = str(ROOT / "scenarios" / "parallel-reads.toml")
# Every fault has a case at one of these: a tool checkpoint (io faults,
# cancellation, sigterm), a body's start (crash-in-repair, second-writer), a
# written batch (power-loss, torn-write), the end (corrupt-committed); in
# parallel-reads the fourth call's checkpoint fails while three have passed.
SUBSET = (
    "(payment and (tool/logged#1 or tool/durable#1 or flush/written#3 or turn/durable#1))"
    " or (parallel-reads and (tool/logged#4 or tool/durable#2 or flush/written#3))"
)

pytestmark = [
    pytest.mark.realprocess,
    pytest.mark.skipif(shutil.which("node") is None, reason="needs node (Node.js 20) on PATH"),
    pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace (.ci/run installs it)"),
]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_the_correct_runtime_passes_every_fault(mode: str, tmp_path: Path) -> None:
    target = f"node {RUNTIME} --io {mode}"
    # double-sigkill is in `all` (issue 30): its planning runs a recovery per
    # first kill point, before -k selects, so it is bounded here.
    code, cases = explore(tmp_path, target, PAYMENT, PARALLEL, "--faults", "all", "-k", SUBSET,
                          "--max-double-cases", "2")  # fmt: skip
    assert failing(cases) == [] and code == 0
    judged = {c["fault"] for c in cases if c["verdict"] == "pass"}
    # Every fault of `all` judged, none vacuously (double-sigkill's cases are
    # a seeded sample of kill-point pairs: the full measurement runs them).
    wanted = {f.name for f in CLASSIC_FAULTS.values() if f.in_all} - {"double-sigkill"}
    assert judged >= wanted, wanted - judged
    assert {str(c["id"]).split("::")[0] for c in cases} == {"payment.toml", "parallel-reads.toml"}


def test_the_power_faults_pass_on_the_targets_own_facts_too(tmp_path: Path) -> None:
    target = f"node {RUNTIME} --io async"
    code, cases = explore(tmp_path, target, PARALLEL, "--faults", "power-loss,torn-write",
                          "-k", "flush/written#3", truth="facts")  # fmt: skip
    assert failing(cases) == [] and code == 0
    assert {c["fault"] for c in cases} >= {"power-loss", "torn-write"}


CAUGHT = [
    # bug (tests/runtimes/node/README.md), scenario, fault, kill point, the code
    ("no-log-fsync", PAYMENT, "power-loss", "flush/written#3", "FSYNC_NOT_MADE"),
    ("no-request-checkpoint", PAYMENT, "sigkill", "model/chunk#1", "REQUEST_ENVELOPE_LOST"),
    ("keep-torn-tail", PAYMENT, "torn-write", "flush/written#3", "CORRUPT_COMMITTED_LOG"),
    ("no-writer-lock", PAYMENT, "second-writer", "tool/durable#1", "SEQ_FORK"),
    ("cut-not-kept", PAYMENT, "torn-write", "flush/written#3", "CUT_TAIL_LOST"),
    ("ignore-failed-flush", PAYMENT, "io-error", "request/logged#1",
     "DISPATCH_AFTER_FAILED_CHECKPOINT"),
    ("no-cancel-recheck", PAYMENT, "cancel-in-checkpoint", "tool/logged#1",
     "DISPATCH_AFTER_CANCEL"),
    ("unknown-says-safe", PAYMENT, "sigkill", "tool/durable#1", "UNSAFE_RETRY_GUIDANCE"),
]  # fmt: skip


@pytest.mark.parametrize(("bug", "scenario", "fault", "at", "expected"), CAUGHT,
                         ids=[c[0] for c in CAUGHT])  # fmt: skip
def test_each_broken_variant_is_caught_with_its_code(
    bug: str, scenario: str, fault: str, at: str, expected: str, tmp_path: Path
) -> None:
    target = f"node {RUNTIME} --io sync --bug {bug}"
    code, cases = explore(tmp_path, target, scenario, "--faults", fault, "-k", f"{at}[{fault}]")
    caught = [c for c in cases if c["occurrence"] == at]
    assert len(caught) == 1 and code == 1, failing(cases)
    assert caught[0]["verdict"] == "fail" and expected in caught[0]["codes"], caught[0]["codes"]


def test_io_uring_is_named_not_judged(tmp_path: Path) -> None:
    # libuv submits Node's async fs calls through io_uring when asked to:
    # strace sees no write or fsync, so the power faults cannot be judged
    # from the system calls, and the lab must say so rather than blame.
    target = f"env UV_USE_IO_URING=1 node {RUNTIME} --io async"
    _code, cases = explore(tmp_path, target, PAYMENT, "--faults", "power-loss")
    power = [c for c in cases if c["fault"] == "power-loss"]
    assert power and all(c["codes"] == ["TRACE_UNSUPPORTED"] for c in power), failing(cases)
    messages = [str(v["message"]) for c in power for v in c["violations"]]  # type: ignore[attr-defined]
    assert all("io_uring" in m for m in messages), messages


def test_its_toml_subset_reads_every_bundled_scenario_as_tomllib_does(tmp_path: Path) -> None:
    import tomllib

    files = sorted(str(p) for p in (ROOT / "scenarios").glob("*.toml"))
    read = ("const {parseToml} = require(process.argv[1]); const fs = require('fs');"
            "console.log(JSON.stringify(process.argv.slice(2).map("
            "(f) => parseToml(fs.readFileSync(f, 'utf8')))))")  # fmt: skip
    done = subprocess.run(["node", "-e", read, str(RUNTIME.parent / "toml.js"), *files],
                          capture_output=True, text=True, timeout=60, check=True)  # fmt: skip
    assert json.loads(done.stdout) == [tomllib.loads(Path(f).read_text()) for f in files]
    bad = tmp_path / "bad.toml"
    bad.write_text('format = 1\nname = """two\nlines"""\n')
    refused = subprocess.run(["node", str(RUNTIME), str(bad), "--session-dir", str(tmp_path / "s")],
                             capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert refused.returncode == 2
    assert refused.stderr.strip().endswith("bad.toml:2: multi-line strings are not supported")
