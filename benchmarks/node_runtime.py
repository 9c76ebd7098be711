# Issue 30's measurement of the Node.js runtime (tests/runtimes/node/):
# `faultlab explore` of every bundled scenario under every fault, once per
# I/O mode (sync, async) and ground truth (system calls, the target's own
# facts), with the cases, the failures (by code) and the seconds of each
# run.  A measurement to read, not a test: nothing is asserted, and the
# exit status is 0 whatever the verdicts (tests/integration/test_node_runtime.py
# holds a cheap subset to the acceptance).
#
#   python benchmarks/node_runtime.py                 # all of it (tens of minutes on 2 cores)
#   python benchmarks/node_runtime.py --modes async --truths facts scenarios/payment.toml
#   python benchmarks/node_runtime.py --out reports/node-runtime.json   # the rows as JSON too
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

__all__: list[str] = []

ROOT = Path(__file__).resolve().parent.parent
RUNTIME = ROOT / "tests" / "runtimes" / "node" / "runtime.js"


def explore(
    mode: str, truth: str, scenarios: list[str], faults: str, jobs: int
) -> dict[str, object]:
    """One explore run; its cases, failures, wall seconds and CPU seconds."""
    argv = [
        sys.executable, "-m", "faultlab", "explore", *scenarios, "--faults", faults,
        "--target", f"node {RUNTIME} --io {mode}", "--jobs", str(jobs), "--json", "--no-report",
    ]  # fmt: skip
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    done = subprocess.run(
        argv, capture_output=True, text=True, check=False, cwd=ROOT,
        env={**os.environ, "FAULTLAB_GROUND_TRUTH": truth},
    )  # fmt: skip
    seconds = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    try:
        cases = json.loads(done.stdout)["cases"]
    except (json.JSONDecodeError, KeyError):
        tail = done.stderr.strip().splitlines()[-1:] or [f"exit {done.returncode}"]
        return {"mode": mode, "truth": truth, "error": tail[0], "seconds": seconds}
    failing = [c for c in cases if c["verdict"] != "pass"]
    return {
        "mode": mode, "truth": truth, "status": done.returncode, "cases": len(cases),
        "failing": len(failing), "verdicts": dict(Counter(c["verdict"] for c in cases)),
        "codes": dict(Counter(code for c in failing for code in c["codes"])),
        "failures": [f"{c['id']} {c['verdict']} {','.join(c['codes'])}" for c in failing],
        "seconds": round(seconds, 1), "cpu": round(cpu, 1),
    }  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("scenarios", nargs="*", help="default: scenarios/*.toml")
    parser.add_argument("--modes", default="sync,async")
    parser.add_argument("--truths", default="syscalls,facts")
    parser.add_argument("--faults", default="all")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out", type=Path, help="also write the rows as JSON here")
    options = parser.parse_args()
    scenarios = options.scenarios or sorted(str(p) for p in (ROOT / "scenarios").glob("*.toml"))
    rows = []
    for mode in options.modes.split(","):
        for truth in options.truths.split(","):
            print(f"exploring: --io {mode}, ground truth {truth} ...", file=sys.stderr, flush=True)
            rows.append(explore(mode, truth, scenarios, options.faults, options.jobs))
    if options.out is not None:
        options.out.write_text(json.dumps(rows, indent=2) + "\n")
    print(f"{len(scenarios)} scenario(s), --faults {options.faults}, --jobs {options.jobs}, "
          f"load average {os.getloadavg()[0]:.1f}")  # fmt: skip
    header = ("io", "ground truth", "cases", "failing", "seconds", "cpu s")
    print("{:6} {:12} {:>6} {:>8} {:>8} {:>7}  codes".format(*header))
    for row in rows:
        if "error" in row:
            print(f"{row['mode']:6} {row['truth']:12} error: {row['error']}")
            continue
        print(f"{row['mode']:6} {row['truth']:12} {row['cases']:>6} {row['failing']:>8} "
              f"{row['seconds']:>8} {row['cpu']:>7}  {row['codes'] or '-'}")  # fmt: skip
        for failure in row["failures"]:  # type: ignore[attr-defined]
            print(f"    {failure}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
