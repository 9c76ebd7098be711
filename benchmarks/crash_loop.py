# Crash cases per second, --spawn fork vs exec, against the bare fork-and-kill floor.
# Thin: the measurement is faultlab.bench.crash_loop; see benchmarks/README.md.
from __future__ import annotations

import sys
from pathlib import Path

from faultlab.bench import script_main

__all__: list[str] = []

if __name__ == "__main__":
    sys.exit(
        script_main(
            ["crash_loop"], Path(__file__).resolve().parent.parent / "reports" / "bench.json"
        )
    )
