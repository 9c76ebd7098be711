# No ACP agent outlives the lab: not after an exploration driven over ACP, not
# when the lab is interrupted or SIGKILLed mid-run (forked agents and the ACP
# fork server leave when their pipes close).  Agents are recognised by their
# working directory (under the lab's TMPDIR, unique to each test).
from __future__ import annotations

import shutil
import signal
from pathlib import Path

import pytest
from orphans import gone, interrupt_lab

TINY_TOOL = Path(__file__).resolve().parents[1] / "scenarios" / "tiny-tool.toml"
pytestmark = pytest.mark.realprocess


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL])
def test_no_acp_agent_outlives_an_interrupted_exploration(tmp_path: Path, signum: int) -> None:
    scenario = tmp_path / "orphan-check.toml"
    shutil.copy(TINY_TOOL, scenario)
    returncode, err = interrupt_lab(
        ["explore", str(scenario), "--drive", "acp", "--jobs", "2", "--no-report"],
        tmp_path, signum,
    )  # fmt: skip
    if signum != signal.SIGKILL:
        assert returncode == 130, err
    assert gone(str(tmp_path), within=10) == []
