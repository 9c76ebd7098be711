# Issue 30's measurement for the third-party Rust runtime
# (tests/runtimes/rust/): build it with rustc, then `faultlab explore` every
# bundled scenario under every fault once per ground truth (the system calls,
# then the target's own facts) and print cases, passes, failures and wall
# seconds per ground truth, then every failing case.  Exit 1 when any case
# did not pass (a false alarm), 0 otherwise; times are never judged.
#
#   python3 benchmarks/rust_runtime.py [--faults all] [--jobs 2] [--truths syscalls,facts]
#                                      [--bug NAME] [--json OUT] [SCENARIO ...]
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

__all__: list[str] = []

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "tests" / "runtimes" / "rust"


def build(where: Path) -> Path:
    binary = where / "rust-runtime"
    command = ["rustc", "-O", "--edition", "2021", str(SOURCE / "main.rs"), "-o", str(binary)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"rust_runtime: rustc failed:\n{done.stderr}")
    return binary


def explore(
    target: str, scenarios: list[str], faults: str, jobs: int, truth: str
) -> dict[str, Any]:
    env = {**os.environ, "FAULTLAB_GROUND_TRUTH": truth}
    command = [sys.executable, "-m", "faultlab", "explore", *scenarios, "--faults", faults,
               "--target", target, "--jobs", str(jobs), "--json", "--no-report"]  # fmt: skip
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    seconds = time.monotonic() - started
    if not done.stdout:
        sys.exit(f"rust_runtime: faultlab explore printed nothing (exit {done.returncode}):\n"
                 f"{done.stderr[-2000:]}")  # fmt: skip
    cases = json.loads(done.stdout)["cases"]
    verdicts = Counter(case["verdict"] for case in cases)
    failing = [(case["id"], case["verdict"], case["codes"]) for case in cases
               if case["verdict"] != "pass"]  # fmt: skip
    return {"truth": truth, "status": done.returncode, "cases": len(cases),
            "verdicts": dict(verdicts), "seconds": round(seconds, 1), "failing": failing,
            "perFault": dict(Counter(case["fault"] for case in cases))}  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("scenarios", nargs="*", help="default: every bundled scenario")
    parser.add_argument("--faults", default="all")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--truths", default="syscalls,facts")
    parser.add_argument("--bug", default=None, help="a deliberate bug of the runtime (--bug NAME)")
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    args = parser.parse_args()
    if shutil.which("rustc") is None:
        sys.exit("rust_runtime: needs rustc (Debian package `rustc`)")
    scenarios = args.scenarios or sorted(str(p) for p in (ROOT / "scenarios").glob("*.toml"))
    rows = []
    with tempfile.TemporaryDirectory(prefix="rust-runtime-") as scratch:
        target = str(build(Path(scratch)))
        if args.bug:
            target += f" --bug {args.bug}"
        for truth in args.truths.split(","):
            print(f"exploring {len(scenarios)} scenario(s), faults {args.faults}, "
                  f"ground truth {truth} ...", file=sys.stderr, flush=True)  # fmt: skip
            rows.append(explore(target, scenarios, args.faults, args.jobs, truth))
    load = os.getloadavg()[0]
    print(f"rust runtime, {len(scenarios)} scenario(s), --faults {args.faults}, "
          f"--jobs {args.jobs}, load average {load:.1f}")  # fmt: skip
    print(f"{'ground truth':<14}{'cases':>7}{'pass':>7}{'fail':>7}{'other':>7}{'seconds':>9}")
    for row in rows:
        verdicts = row["verdicts"]
        other = row["cases"] - verdicts.get("pass", 0) - verdicts.get("fail", 0)
        print(f"{row['truth']:<14}{row['cases']:>7}{verdicts.get('pass', 0):>7}"
              f"{verdicts.get('fail', 0):>7}{other:>7}{row['seconds']:>9}")  # fmt: skip
    for row in rows:
        for case_id, verdict, codes in row["failing"]:
            print(f"  [{row['truth']}] {case_id}: {verdict} {' '.join(codes)}")
    if args.json is not None:
        args.json.write_text(json.dumps({"scenarios": scenarios, "rows": rows}, indent=1))
    return 1 if any(row["failing"] for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
