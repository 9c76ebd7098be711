"""Test target: the reference runtime whose `--resume` runs start 0.6 s late,
as an interpreter does on a loaded machine.

Not a broken runtime: under the second-writer fault the first writer stays
parked while the second and the third start and are refused, so a slow start
makes the park long, and a tool latency timer that was running when the first
writer parked runs out meanwhile. Its call then returns before calls it
would have returned after, a valid order of the same events. Run exactly
like `python -m faultlab.runtime`.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

if __name__ == "__main__":
    from faultlab.runtime.__main__ import main

    if "--resume" in sys.argv:
        time.sleep(0.6)
    sys.exit(main())
