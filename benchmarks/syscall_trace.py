# The reference run traced by strace vs untraced, and the two ways of
# tracing it: exec'd under strace vs forked with strace attached (issue 34),
# in wall time and CPU time, side by side.  Thin: the measurement is
# faultlab.bench.syscalltrace; see benchmarks/README.md.
from __future__ import annotations

import sys
from pathlib import Path

from faultlab.bench import script_main

__all__: list[str] = []

if __name__ == "__main__":
    sys.exit(
        script_main(
            ["syscall_trace"], Path(__file__).resolve().parent.parent / "reports" / "bench.json"
        )
    )
