# All four benchmarks of issue 4 in one run; the table on stdout, reports/bench.json.
# Thin: the measurements are faultlab.bench; see benchmarks/README.md.
from __future__ import annotations

import sys
from pathlib import Path

from faultlab.bench import SECTIONS, script_main

__all__: list[str] = []

if __name__ == "__main__":
    sys.exit(
        script_main(
            list(SECTIONS), Path(__file__).resolve().parent.parent / "reports" / "bench.json"
        )
    )
