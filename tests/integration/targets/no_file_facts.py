"""Test target: the reference runtime with every file fact taken out of its
probe reports.

Not a broken runtime (its files are handled exactly as the reference's): a
third-party target that speaks only the boundary part of the probe
protocol, reporting no `create`, `write`, `fsync`, `dirsync`, `truncate` or
`cut` and no `file`/`size` on `flush/written`. With the system-call ground
truth the lab still derives its power-loss and torn-write states (from the
strace of the reference run); with the target's own facts it cannot
(FAULT_UNSUPPORTED). Run exactly like `python -m faultlab.runtime`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[3]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from faultlab.probe import PROBE, Probe  # noqa: E402

_FILE_FACTS = frozenset({"create", "write", "fsync", "dirsync", "truncate", "cut"})
_fact = Probe.fact
_reach = Probe.reach


def fact(self: Probe, kind: str, **facts: Any) -> None:
    if kind not in _FILE_FACTS:
        _fact(self, kind, **facts)


def reach(self: Probe, boundary: str, **facts: Any) -> None:
    if boundary == "flush/written":
        facts = {k: v for k, v in facts.items() if k not in ("file", "size")}
    _reach(self, boundary, **facts)


Probe.fact = fact  # type: ignore[method-assign]
Probe.reach = reach  # type: ignore[method-assign]
assert PROBE.fact.__func__ is fact  # type: ignore[attr-defined]

if __name__ == "__main__":
    from faultlab.runtime.__main__ import main

    sys.exit(main())
