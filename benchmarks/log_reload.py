# Log reload + expected repair in MB/s on a generated 100 MB log, orjson vs json.
# Thin: the measurement is faultlab.bench.log_reload; see benchmarks/README.md.
from __future__ import annotations

import sys
from pathlib import Path

from faultlab.bench import script_main

__all__: list[str] = []

if __name__ == "__main__":
    sys.exit(
        script_main(
            ["log_reload"], Path(__file__).resolve().parent.parent / "reports" / "bench.json"
        )
    )
