"""Test target: the reference runtime that also keeps a notes file in its
session directory through a shared, writable mmap.

Its session log is handled exactly as the reference's; but writes through
a mapping make no system call, so the system-call trace cannot show what
the run did to that file. The lab must say so (TRACE_UNSUPPORTED on its
power-loss and torn-write cases) instead of judging the run from a gap in
its file model. Run exactly like `python -m faultlab.runtime`.
"""

from __future__ import annotations

import mmap
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def _notes(session: str) -> None:
    os.makedirs(session, exist_ok=True)
    fd = os.open(os.path.join(session, "notes.bin"), os.O_RDWR | os.O_CREAT, 0o644)
    os.ftruncate(fd, 4096)
    with mmap.mmap(fd, 4096) as notes:
        notes[:6] = b"noted\n"
    os.close(fd)


if __name__ == "__main__":
    from faultlab.runtime.__main__ import main

    _notes(sys.argv[sys.argv.index("--session-dir") + 1])
    sys.exit(main())
