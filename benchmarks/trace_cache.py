# What the cache of traced reference runs saves (issue 34, item 1;
# faultlab/lab/process/tracecache.py): `faultlab explore SCENARIOS --target
# TARGET --faults power-loss -k EXPR --no-report`, whose reference runs are
# traced by strace (a --target is exec'd under it), with a cold cache (an
# empty folder) and a warm one (the folder a previous run filled), in
# alternating order round after round; medians of wall and CPU time (the
# command and every process it waited for) and warm / cold.  -k keeps one
# cheap case per scenario so the reference runs dominate.  Never asserts a
# time; on a shared machine only the ratios mean something.
#
#   python3 benchmarks/trace_cache.py [--target CMD] [--rounds N] [SCENARIO...]
from __future__ import annotations

import argparse
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

__all__: list[str] = []

_ROOT = Path(__file__).resolve().parent.parent
_SCENARIOS = ["payment.toml", "chat.toml", "nested-parallel.toml"]


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("scenarios", nargs="*")
    parser.add_argument("--target", default=f"{sys.executable} -m faultlab.runtime")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("rounds must be >= 1")
    if shutil.which("strace") is None:
        parser.error("needs strace (the cache holds strace's traces)")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # subprocess.run kills its child
    scenarios = args.scenarios or [str(_ROOT / "scenarios" / name) for name in _SCENARIOS]
    scratch = Path(tempfile.mkdtemp(prefix="faultlab-trace-cache-"))
    warm = scratch / "warm"
    command = [sys.executable, "-m", "faultlab", "explore", *scenarios, "--target", args.target,
               "--faults", "power-loss", "-k", "written#1", "--no-report", "-j", "1"]  # fmt: skip

    def explore(cache: Path) -> tuple[float, float]:
        env = {**os.environ, "PYTHONPATH": str(_ROOT), "FAULTLAB_TRACE_CACHE": str(cache),
               "FAULTLAB_GROUND_TRUTH": "syscalls"}  # fmt: skip
        cpu, started = _children_cpu(), time.perf_counter()
        done = subprocess.run(command, env=env, cwd=scratch, capture_output=True, timeout=3600,
                              check=False)  # fmt: skip
        wall, cpu = time.perf_counter() - started, _children_cpu() - cpu
        if done.returncode not in (0, 1):
            raise SystemExit(f"explore: exit {done.returncode}\n{done.stderr.decode()[-2000:]}")
        return wall, cpu

    samples: dict[str, list[tuple[float, float]]] = {"cold": [], "warm": []}
    load = [os.getloadavg()[0]]
    try:
        explore(warm)  # fills the warm cache
        for round_ in range(args.rounds):
            for side in ("cold", "warm") if round_ % 2 == 0 else ("warm", "cold"):
                cache = warm if side == "warm" else scratch / f"cold-{round_}"
                wall, cpu = explore(cache)
                samples[side].append((wall, cpu))
                print(f"round {round_ + 1} {side}: {wall:7.2f} s wall {cpu:7.2f} s cpu",
                      file=sys.stderr, flush=True)  # fmt: skip
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    load.append(os.getloadavg()[0])
    medians = {side: (statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs))
               for side, runs in samples.items()}  # fmt: skip
    print(f"target: {args.target}; {len(scenarios)} scenario(s), power-loss, -k written#1")
    for side, (wall, cpu) in medians.items():
        print(f"{side:5} {wall:8.2f} s wall {cpu:8.2f} s cpu")
    print(f"ratio warm/cold: wall {medians['warm'][0] / medians['cold'][0]:.2f}x, "
          f"cpu {medians['warm'][1] / medians['cold'][1]:.2f}x")  # fmt: skip
    print(f"(medians of {args.rounds} rounds; load average {load[0]:.1f} -> {load[1]:.1f}; "
          f"{os.cpu_count()} CPUs)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
