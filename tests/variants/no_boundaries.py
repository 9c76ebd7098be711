"""Variant: the runtime never reports a boundary.

Bug imitated: the probe calls were lost (an integration that forgot to wire
`faultlab.probe` in, or a refactor that guarded every `PROBE.reach` behind a
flag that is never set).  The runtime itself works and exits cleanly, so a lab
that plans its kill points from the boundaries the reference run reported
has no case to run, and a lab that calls that "nothing failed" is green on
nothing.

The oracle must report: NO_BOUNDARY_REPORTED (coverage).
Shows at: the coverage check of any scenario (chat.toml::coverage).
"""

from __future__ import annotations

from typing import Any

from _common import run

from faultlab.probe import Probe


def _silent(self: Probe, boundary: str, **facts: Any) -> None:
    del self, boundary, facts  # reached, but never reported to the lab


Probe.reach = _silent  # type: ignore[method-assign]

if __name__ == "__main__":
    run()
