# The crash lab: spawn, arm, kill, recover, check, explore, report.  It never
# imports `faultlab.runtime`; it reaches a target only through the probe
# protocol, the log format and the scenario.
from __future__ import annotations

__all__: list[str] = []
