"""A target that never reaches any boundary and never exits on its own.

Imitates a runtime stuck in a dead lock or an endless retry loop.  The lab
must report ``CHILD_HUNG`` within its timeout and leave no process behind.
"""

from __future__ import annotations

import time

if __name__ == "__main__":
    while True:
        time.sleep(3600)
