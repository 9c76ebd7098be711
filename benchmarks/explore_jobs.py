# Wall time of exploring every bundled scenario with --jobs 1 and --jobs 2.
# Thin: the measurement is faultlab.bench.explore_jobs; see benchmarks/README.md.
from __future__ import annotations

import sys
from pathlib import Path

from faultlab.bench import script_main

__all__: list[str] = []

if __name__ == "__main__":
    sys.exit(
        script_main(
            ["explore_jobs"], Path(__file__).resolve().parent.parent / "reports" / "bench.json"
        )
    )
