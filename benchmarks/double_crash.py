# Double-sigkill cases (crashes during recovery) vs single SIGKILL cases: the
# cost per case, side by side.  Thin: the measurement is
# faultlab.bench.doublecrash; see benchmarks/README.md.
from __future__ import annotations

import sys
from pathlib import Path

from faultlab.bench import script_main

__all__: list[str] = []

if __name__ == "__main__":
    sys.exit(
        script_main(
            ["double_crash"], Path(__file__).resolve().parent.parent / "reports" / "bench.json"
        )
    )
