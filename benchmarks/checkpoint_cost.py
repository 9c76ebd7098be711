# Checkpoint cost by policy: fsyncs and throughput of long streams and many tool calls.
# Thin: the measurement is faultlab.bench.checkpoint_cost; see benchmarks/README.md.
from __future__ import annotations

import sys
from pathlib import Path

from faultlab.bench import script_main

__all__: list[str] = []

if __name__ == "__main__":
    sys.exit(
        script_main(
            ["checkpoint_cost"], Path(__file__).resolve().parent.parent / "reports" / "bench.json"
        )
    )
