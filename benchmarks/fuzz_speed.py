# Issue 34's fuzz speed figure: `faultlab fuzz --faults all` cases per second
# against `faultlab explore --faults all` on the bundled scenarios, the two
# commands alternated in one run (explore, fuzz, fuzz, explore, ...), each
# with the same --jobs, wall and CPU (the command and every process it
# started and reaped) per case, and the ratio of their medians.
#
#   python benchmarks/fuzz_speed.py [--examples 2000] [--seed 7] [--jobs 2] [--rounds 1]
from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

__all__ = ["main", "measure"]


def measure(command: list[str]) -> tuple[int, float, float]:
    """(crash cases, wall s, CPU s) of one faultlab command run with --json."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "faultlab", *command, "--json"],
                          capture_output=True, check=False)  # fmt: skip
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(command)}: exit {done.returncode}: {done.stderr[-500:]!r}")
    cases = orjson.loads(done.stdout)["cases"]  # fuzz: a count of examples, each one case
    crash = cases if isinstance(cases, int) else sum(
        1 for case in cases if case.get("fault") != "reference")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return crash, wall, cpu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--examples", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args(argv)
    jobs = ["--jobs", str(args.jobs), "--faults", "all"]
    rates: dict[str, list[tuple[float, float]]] = {"explore": [], "fuzz": []}
    with tempfile.TemporaryDirectory(prefix="faultlab-fuzz-speed-") as scratch:
        commands = {
            "explore": ["explore", *jobs, "--no-report"],
            # A fresh report dir per run: no fuzz-db replays from a run before.
            "fuzz": ["fuzz", *jobs, "--examples", str(args.examples), "--seed", str(args.seed),
                     "--report-dir", str(Path(scratch) / "fuzz")],
        }  # fmt: skip
        for number in range(args.rounds):
            order = ("explore", "fuzz") if number % 2 == 0 else ("fuzz", "explore")
            for name in order:
                cases, wall, cpu = measure(commands[name])
                rates[name].append((cases / wall, cpu / cases * 1000))
                print(f"{name}: {cases} case(s), {wall:.1f} s wall, {cpu:.1f} s CPU "
                      f"({cases / wall:.1f} cases/s, {cpu / cases * 1000:.0f} ms CPU per case)",
                      file=sys.stderr, flush=True)  # fmt: skip
    explore = statistics.median(r for r, _c in rates["explore"])
    fuzz = statistics.median(r for r, _c in rates["fuzz"])
    cpu_explore = statistics.median(c for _r, c in rates["explore"])
    cpu_fuzz = statistics.median(c for _r, c in rates["fuzz"])
    print(f"{os.cpu_count()} CPU(s), --jobs {args.jobs}, {args.rounds} round(s)")
    print(f"explore --faults all (bundled): {explore:.1f} cases/s, {cpu_explore:.0f} ms CPU/case")
    print(f"fuzz --examples {args.examples} --faults all --seed {args.seed}: {fuzz:.1f} cases/s, "
          f"{cpu_fuzz:.0f} ms CPU/case")  # fmt: skip
    print(f"fuzz/explore cases per second: {fuzz / explore:.2f} (target >= 0.8)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
