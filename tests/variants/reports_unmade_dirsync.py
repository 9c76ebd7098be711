"""Variant: the JSONL backend reports a directory fsync it never made.

Bug imitated: the fsync of the session directory after the log is linked
into place was dropped ("the link is atomic anyway") while its probe fact
stayed. The link is atomic, but not durable: after a power loss the new
log's name may be gone with everything in it. The target's own facts say
the entry was made durable, so under them every power-loss case passes; the
system calls show no fsync of the directory at all.

The oracle must report: DIRSYNC_NOT_MADE (the reported dirsync checked
against the strace of the reference run), and under power-loss the losses of
a vanished log (REQUEST_ENVELOPE_LOST, SETTLED_STEP_LOST).
Shows at: chat.toml flush/written#2 [power-loss].
"""

from __future__ import annotations

from pathlib import Path

from _common import run

from faultlab.probe import PROBE
from faultlab.runtime.backends import jsonl


def _fsync_dir(directory: Path) -> None:
    # The bug: no open + os.fsync of the directory, but the fact says there was.
    if PROBE.enabled:
        PROBE.fact("dirsync", dir=str(directory))


jsonl._fsync_dir = _fsync_dir

if __name__ == "__main__":
    run()
