"""Variant: the runtime reports no tool boundary.

Bug imitated: a runtime integration that wired the probe into its model
calls and turn ends but forgot the tool dispatcher (`tool/logged`,
`tool/durable`, `tool/effect`, `tool/returned` never reported).  Every fault
injected only at tool boundaries (cancel-in-checkpoint) gets no case at all,
and the tool checkpoint (G2) is never exercised; a lab that counts "no
failing case" as a pass is green on nothing for that fault.

The oracle must report: FAULT_NOT_PLANNED (coverage).
Shows at: the coverage check of payment.toml planned with cancel-in-checkpoint.
"""

from __future__ import annotations

from typing import Any

from _common import run

from faultlab.probe import Probe

_reach = Probe.reach


def _no_tool_boundaries(self: Probe, boundary: str, **facts: Any) -> None:
    if not boundary.startswith("tool/"):
        _reach(self, boundary, **facts)


Probe.reach = _no_tool_boundaries  # type: ignore[method-assign]

if __name__ == "__main__":
    run()
