# A crash tester must leave no process behind: not after a full exploration,
# not when it is interrupted (SIGTERM, Ctrl-C), not even when it is SIGKILLed.
# Children are recognised by their working directory (the reference runtime
# runs in its case directory, under the lab's TMPDIR, unique to each test) or
# by the scenario path in their command line (exec'd children).
from __future__ import annotations

import shutil
import signal
from pathlib import Path

import psutil
import pytest
from orphans import gone, interrupt_lab, ours

from faultlab import lab
from faultlab.lab.campaigns.explore import explore, load_scenarios
from faultlab.lab.process.reference import LabOptions

TINY_TOOL = Path(__file__).resolve().parents[1] / "scenarios" / "tiny-tool.toml"
pytestmark = pytest.mark.realprocess


def private_scenario(tmp_path: Path) -> Path:
    copy = tmp_path / "orphan-check.toml"
    shutil.copy(TINY_TOOL, copy)
    return copy


def others(proc: psutil.Process) -> bool:
    return "faultlab.runtime.forkserver" not in " ".join(proc.cmdline())


@pytest.mark.parametrize("spawn", ["fork", "exec"])
def test_no_child_outlives_a_full_exploration(tmp_path: Path, spawn: str) -> None:
    scenario = private_scenario(tmp_path)
    before = [p for p in psutil.Process().children(recursive=True) if others(p)]
    target = lab.make_target()
    options = LabOptions(target, tmp_path / "work", spawn=spawn)
    result = explore(load_scenarios([scenario]), options, jobs=2)
    assert result.passed
    assert ours(str(tmp_path)) == []
    after = [p for p in psutil.Process().children(recursive=True) if others(p)]
    assert len(after) == len(before)


@pytest.mark.parametrize("spawn", ["fork", "exec"])
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL])
def test_no_child_outlives_an_interrupted_exploration(
    tmp_path: Path, signum: int, spawn: str
) -> None:
    scenario = private_scenario(tmp_path)
    returncode, err = interrupt_lab(
        ["explore", str(scenario), "--jobs", "2", "--no-report", "--spawn", spawn],
        tmp_path, signum,
    )  # fmt: skip
    if signum != signal.SIGKILL:
        assert returncode == 130, err
        assert b"interrupted" in err
    # SIGKILL gives the lab no chance to clean up: the children notice that
    # their probe pipe closed and leave on their own, within a moment.
    assert gone(str(tmp_path), within=10) == []


def test_no_child_outlives_an_interrupted_fuzz_campaign(tmp_path: Path) -> None:
    returncode, err = interrupt_lab(
        ["fuzz", "--examples", "300", "--jobs", "2", "--seed", "1",
         "--report-dir", str(tmp_path / "reports")],
        tmp_path, signal.SIGINT, settle=0.5,  # well into the campaign: both streams running
    )  # fmt: skip
    assert returncode == 130, err
    assert b"interrupted" in err and b"Traceback" not in err
    assert gone(str(tmp_path), within=10) == []
