"""Variant: the writer lock file is opened with O_TRUNC before it is locked.

Bug imitated: `open(lock_path, "w")` then `flock`: the open truncates the file
whether or not the lock is then granted, so every refused writer wipes the
pid the live writer wrote there (a person, or a stale-lock cleaner reading
it, then sees an unowned lock). The lock itself still holds.

The oracle must report: SEQ_FORK (the second writer was refused but left the
live writer's lock file changed).
Shows at: payment.toml tool/durable#1 under the second-writer fault.
"""

from __future__ import annotations

import os
from pathlib import Path

from _common import run

from faultlab.runtime.backends import jsonl, writerlock


def _truncating(lock_path: Path, session_path: Path) -> int:
    os.close(os.open(lock_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644))  # the bug
    return writerlock.take_writer_lock(lock_path, session_path)


jsonl.take_writer_lock = _truncating  # type: ignore[assignment]

if __name__ == "__main__":
    run()
