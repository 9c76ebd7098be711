# A crash tester must leave no process behind: not after a full exploration,
# not when it is interrupted (SIGTERM, Ctrl-C), not even when it is SIGKILLed.
# Children are recognised by the scenario path, unique to each test.
from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from faultlab.lab import api

TINY_TOOL = Path(__file__).resolve().parents[1] / "scenarios" / "tiny-tool.toml"
pytestmark = pytest.mark.realprocess


def ours(marker: str) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        cmdline = " ".join(proc.info["cmdline"] or [])
        alive = proc.info["status"] != psutil.STATUS_ZOMBIE
        if marker in cmdline and "faultlab.runtime" in cmdline and alive:
            found.append(proc)
    return found


def gone(marker: str, within: float) -> list[psutil.Process]:
    deadline = time.monotonic() + within
    while (left := ours(marker)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def wait_for_child(marker: str, within: float = 60) -> None:
    deadline = time.monotonic() + within
    while not ours(marker):
        assert time.monotonic() < deadline, "no child ever started"
        time.sleep(0.02)


def private_scenario(tmp_path: Path) -> Path:
    copy = tmp_path / "orphan-check.toml"
    shutil.copy(TINY_TOOL, copy)
    return copy


def test_no_child_outlives_a_full_exploration(tmp_path: Path) -> None:
    scenario = private_scenario(tmp_path)
    before = len(psutil.Process().children(recursive=True))
    result = api.explore_paths([scenario], jobs=2, workdir=tmp_path / "work")
    assert result.passed
    assert ours(str(scenario)) == []
    assert len(psutil.Process().children(recursive=True)) == before


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL])
def test_no_child_outlives_an_interrupted_exploration(tmp_path: Path, signum: int) -> None:
    scenario = private_scenario(tmp_path)
    lab = subprocess.Popen(
        [sys.executable, "-m", "faultlab", "explore", str(scenario), "--jobs", "2",
         "--no-report"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        start_new_session=True,
    )  # fmt: skip
    try:
        wait_for_child(str(scenario))
        lab.send_signal(signum)
        _out, err = lab.communicate(timeout=60)
    finally:
        if lab.poll() is None:
            lab.kill()
            lab.wait(10)
    if signum != signal.SIGKILL:
        assert lab.returncode == 130, err
        assert b"interrupted" in err
    # SIGKILL gives the lab no chance to clean up: the children notice that
    # their probe pipe closed and leave on their own, within a moment.
    assert gone(str(scenario), within=10) == []
