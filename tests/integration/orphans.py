# Finding the runtime processes a test's lab started (by a marker in their
# command line or working directory), for the no-orphan tests of both drives.
from __future__ import annotations

import time

import psutil

__all__ = ["gone", "ours"]


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
