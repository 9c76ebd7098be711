# No ACP agent outlives the lab: not after an exploration driven over ACP, not
# when the lab is interrupted or SIGKILLed mid-run (forked agents and the ACP
# fork server leave when their pipes close).  Agents are recognised by their
# working directory (under the lab's TMPDIR, unique to each test).
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from orphans import gone, ours

TINY_TOOL = Path(__file__).resolve().parents[1] / "scenarios" / "tiny-tool.toml"
pytestmark = pytest.mark.realprocess


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL])
def test_no_acp_agent_outlives_an_interrupted_exploration(tmp_path: Path, signum: int) -> None:
    scenario = tmp_path / "orphan-check.toml"
    shutil.copy(TINY_TOOL, scenario)
    (tmp_path / "tmp").mkdir()
    lab = subprocess.Popen(
        [sys.executable, "-m", "faultlab", "explore", str(scenario), "--drive", "acp",
         "--jobs", "2", "--no-report"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        start_new_session=True, env={**os.environ, "TMPDIR": str(tmp_path / "tmp")},
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not ours(str(tmp_path)):
            assert time.monotonic() < deadline, "no agent ever started"
            time.sleep(0.02)
        lab.send_signal(signum)
        _out, err = lab.communicate(timeout=60)
    finally:
        if lab.poll() is None:
            lab.kill()
            lab.wait(10)
    if signum != signal.SIGKILL:
        assert lab.returncode == 130, err
    assert gone(str(tmp_path), within=10) == []
