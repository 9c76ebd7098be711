# The pure parts of benchmarks/peers.py: reading each side's case count, the
# medians and ratios, the table, the option checks; and the peer's atomic-JSON
# job itself, run as a real process (killed with a real SIGKILL and resumed).
# The benchmark proper (pip install, minutes of runs) is not run here.
from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_peers", REPO / "benchmarks" / "peers.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_peers"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


peers = _load()


def test_peer_cases_reads_the_crash_point_count() -> None:
    out = "1/3 fault-free ...\n    41 file events -> 40 crash points (+1 control), 2 at a time\n"
    assert peers.peer_cases(out) == 40
    with pytest.raises(peers.BenchError, match="crash points"):
        peers.peer_cases("PASS: 41\n")


def _document(faults: list[str], ran: int | None) -> dict[str, Any]:
    cases = [{"id": f"c{i}", "fault": fault} for i, fault in enumerate(faults)]
    per_fault = {} if ran is None else {"sigkill": {"ran": ran, "unsupported": 0}}
    return {"cases": cases, "perFault": per_fault}


def test_faultlab_cases_counts_crash_cases_not_coverage_rows() -> None:
    doc = _document(["reference", "sigkill", "sigkill", "sigkill"], ran=3)
    assert peers.faultlab_cases(doc) == 3


def test_faultlab_cases_rejects_a_document_that_disagrees_with_itself() -> None:
    with pytest.raises(peers.BenchError, match="reports 5 sigkill cases but lists 2"):
        peers.faultlab_cases(_document(["sigkill", "sigkill"], ran=5))
    with pytest.raises(peers.BenchError, match="no crash case"):
        peers.faultlab_cases(_document(["reference"], ran=0))
    with pytest.raises(peers.BenchError, match="'cases'"):
        peers.faultlab_cases({"passed": True})


def _sample(side: str, round_no: int, cases: int, wall: float, cpu: float) -> Any:
    return peers.Sample(side=side, round=round_no, cases=cases, wall_s=wall, cpu_s=cpu,
                        load=1.0, strays=0)  # fmt: skip


def test_summary_takes_per_case_medians_and_per_round_ratios() -> None:
    samples = [
        _sample("faultlab", 1, 100, 10.0, 2.0),  # 100 ms, 20 ms a case
        _sample("ckpt-chaos", 1, 40, 40.0, 8.0),  # 1000 ms, 200 ms a case
        _sample("faultlab", 2, 100, 20.0, 4.0),  # 200 ms, 40 ms
        _sample("ckpt-chaos", 2, 40, 20.0, 4.0),  # 500 ms, 100 ms
        _sample("faultlab", 3, 100, 15.0, 3.0),  # 150 ms, 30 ms
        _sample("ckpt-chaos", 3, 40, 30.0, 6.0),  # 750 ms, 150 ms
    ]
    summary = peers.summarize(samples, "ckpt-chaos")
    assert summary.faultlab_wall_ms == pytest.approx(150.0)
    assert summary.peer_wall_ms == pytest.approx(750.0)
    assert summary.faultlab_cpu_ms == pytest.approx(30.0)
    assert summary.peer_cpu_ms == pytest.approx(150.0)
    assert summary.wall_ratio == pytest.approx(5.0)
    assert summary.cpu_ratio == pytest.approx(5.0)
    assert summary.wall_ratio_rounds == pytest.approx((10.0, 2.5, 5.0))
    table = peers.format_table(samples, summary, peers.PEER,
                               {"cpus": 2, "load_before": 9.5, "load_after": 11.25})  # fmt: skip
    assert "wall 5.0x (2.5-10.0x over the rounds)" in table
    assert "load 9.5 -> 11.2" in table
    assert "ckpt-chaos==0.1.8" in table


def test_summary_refuses_unpaired_samples() -> None:
    with pytest.raises(peers.BenchError, match="unpaired"):
        peers.summarize([_sample("faultlab", 1, 10, 1.0, 1.0)], "ckpt-chaos")


def test_bad_options_are_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "file").write_text("x")
    cases = [(["--rounds", "0"], "--rounds must be at least 1"),
             (["--json", str(tmp_path / "no" / "out.json")], "--json: no directory"),
             (["--keep-venv", str(tmp_path / "file")], "is not a directory")]  # fmt: skip
    for argv, message in cases:
        with pytest.raises(SystemExit) as stop:
            peers.main(argv)
        assert stop.value.code == 2
        assert message in capsys.readouterr().err


def _run_job(job: Path, out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(job), str(out)], capture_output=True, text=True,
                          check=True, timeout=60)  # fmt: skip


def test_the_job_saves_atomically_and_resumes_after_a_kill(tmp_path: Path) -> None:
    job = tmp_path / "job.py"
    job.write_text(peers.JOB_SOURCE, encoding="utf-8")
    out = tmp_path / "out"
    assert _run_job(job, out).stdout.strip() == "resumed from step 0"
    final = json.loads((out / "state.json").read_text())
    assert final["step"] == peers.JOB_SAVES
    assert _run_job(job, out).stdout.strip() == f"resumed from step {peers.JOB_SAVES}"

    # A real SIGKILL mid-run (after the first save) leaves a whole state file;
    # the restart resumes from it and ends on the same final state.
    killed = tmp_path / "killed"
    stop = f"    os.replace(tmp, path)\n    os.kill(os.getpid(), {int(signal.SIGSTOP)})\n"
    stopping = job.read_text().replace("    os.replace(tmp, path)\n", stop)
    assert stopping != job.read_text()
    stop_after_save = tmp_path / "stop.py"  # SIGSTOPs itself after each save: a kill point
    stop_after_save.write_text(stopping, encoding="utf-8")
    child = subprocess.Popen([sys.executable, str(stop_after_save), str(killed)],
                             stdout=subprocess.DEVNULL)  # fmt: skip
    try:
        _, status = os.waitpid(child.pid, os.WUNTRACED)
        assert os.WIFSTOPPED(status)
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.kill()
        child.wait()
    assert json.loads((killed / "state.json").read_text())["step"] == 1
    assert _run_job(job, killed).stdout.strip() == "resumed from step 1"
    assert json.loads((killed / "state.json").read_text()) == final


_ORPHAN = """
import importlib.util, subprocess, sys, psutil
spec = importlib.util.spec_from_file_location("bench_peers", sys.argv[1])
peers = importlib.util.module_from_spec(spec)
sys.modules["bench_peers"] = peers
spec.loader.exec_module(peers)
assert peers._become_subreaper()
# the shell exits at once and leaves its `sleep` behind: an orphan, now ours
# (and holds the shell's stdout open, as a careless tool's orphan would)
done, wall, cpu, strays = peers._measure(["sh", "-c", "sleep 60 & echo started"],
                                         cwd=peers.REPO, env={"PATH": "/usr/bin:/bin"},
                                         what="sh")
print(done.returncode, done.stdout.decode().strip(), strays, len(psutil.Process().children()))
"""


def test_an_orphan_left_by_a_measured_tool_is_killed_reaped_and_counted() -> None:
    # In a child interpreter: becoming a subreaper and reaping every child
    # would interfere with the test process's own children.
    done = subprocess.run([sys.executable, "-c", _ORPHAN, str(REPO / "benchmarks" / "peers.py")],
                          capture_output=True, text=True, check=True, timeout=60)  # fmt: skip
    # 1 stray: the orphan was still alive when the run's own wait ended, so the
    # measure did not wait for it (through a pipe it would have, 60 s), and
    # it was killed and reaped: none is left.
    assert done.stdout.split() == ["0", "started", "1", "0"]
