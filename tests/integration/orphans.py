# Finding the runtime processes a test's lab started (by a marker in their
# command line or working directory), and interrupting a lab once they run,
# for the no-orphan tests of both drives.
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import psutil

__all__ = ["gone", "interrupt_lab", "ours", "wait_for_child"]


def ours(marker: str) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline", "status", "cwd"]):
        if proc.info["status"] == psutil.STATUS_ZOMBIE:
            continue
        cmdline = " ".join(proc.info["cmdline"] or [])
        if "faultlab.runtime" in cmdline and (
            marker in cmdline or (proc.info["cwd"] or "").startswith(marker)
        ):
            found.append(proc)
    return found


def gone(marker: str, within: float) -> list[psutil.Process]:
    deadline = time.monotonic() + within
    while (left := ours(marker)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def wait_for_child(marker: str, within: float = 60) -> None:
    """Wait until some runtime process of this test's lab is running."""
    deadline = time.monotonic() + within
    while not ours(marker):
        assert time.monotonic() < deadline, "no child ever started"
        time.sleep(0.02)


def interrupt_lab(
    args: list[str], tmp_path: Path, signum: int, *, settle: float = 0.0
) -> tuple[int, bytes]:
    """Run `python -m faultlab ARGS` in its own session with TMPDIR under
    `tmp_path`, send it `signum` once one of its children runs (and `settle`
    seconds more), and return its exit status and stderr.  The lab is killed
    if it outlives the wait."""
    (tmp_path / "tmp").mkdir(exist_ok=True)
    lab = subprocess.Popen(
        [sys.executable, "-m", "faultlab", *args],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        start_new_session=True, env={**os.environ, "TMPDIR": str(tmp_path / "tmp")},
    )  # fmt: skip
    try:
        wait_for_child(str(tmp_path))
        time.sleep(settle)
        lab.send_signal(signum)
        _out, err = lab.communicate(timeout=60)
    finally:
        if lab.poll() is None:
            lab.kill()
            lab.wait(10)
    return lab.returncode, err
