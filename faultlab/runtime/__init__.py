# The reference agent runtime: the system faultlab crash-tests and the model
# implementation of semantic session checkpoints.  It never imports
# `faultlab.lab`; the lab reaches it only through the probe protocol, the log
# format and the scenario.
from __future__ import annotations

__all__ = ["EXIT_CODES"]

EXIT_CODES = {
    "ok": 0,
    "internal": 3,
    "usage": 2,
    "corrupt": 4,
    "locked": 5,
    "persistence": 6,
    "stopped": 7,
}
