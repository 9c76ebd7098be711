# Per-case time of the crash loop through the command line, for two trees
# side by side (issue 29: a change must not slow the hot path): each
# configuration below runs `python -m faultlab explore ... --json --no-report`
# from the BEFORE tree and from the AFTER tree (each first on the children's
# PYTHONPATH and the working directory, so its faultlab is the one run), in
# alternating order round after round, and the table gives the medians of
# wall time and of CPU time (the command and every process it waited for:
# its fork servers and what they reaped) per case, and AFTER / BEFORE.
# Never asserts a time; on a shared machine only the ratios mean something.
#
#   python3 benchmarks/tree_speed.py BEFORE AFTER [--rounds N] [--configs fork,exec,acp]
#       [--json OUT]
from __future__ import annotations

import argparse
import os
import resource
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import orjson

__all__: list[str] = []

_SCENARIOS = ["scenarios/payment.toml", "scenarios/chat.toml"]
_COMMON = ["--faults", "sigkill", "-j", "2", "--no-report", "--json"]
# name -> the explore arguments after the scenarios and the common ones
CONFIGS: dict[str, list[str]] = {
    "fork": [],
    "exec": ["--spawn", "exec"],
    "acp": ["--drive", "acp"],
    "acp-exec": ["--drive", "acp", "--spawn", "exec"],
}


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_once(root: Path, config: str) -> tuple[float, float, int]:
    """One explore from `root`: (wall seconds, CPU seconds, cases)."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    command = [sys.executable, "-m", "faultlab", "explore", *_SCENARIOS, *_COMMON,
               *CONFIGS[config]]  # fmt: skip
    cpu = _children_cpu()
    started = time.perf_counter()
    done = subprocess.run(command, cwd=root, env=env, capture_output=True, timeout=3600,
                          check=False)  # fmt: skip
    wall = time.perf_counter() - started
    cpu = _children_cpu() - cpu
    if done.returncode not in (0, 1):
        raise SystemExit(f"{root} {config}: exit {done.returncode}\n{done.stderr.decode()[-2000:]}")
    cases = len(orjson.loads(done.stdout)["cases"])
    return wall, cpu, cases


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--configs", default="fork,exec,acp")
    parser.add_argument("--json", type=Path, default=None, help="write every sample here")
    args = parser.parse_args(argv)
    # Stopped (SIGTERM), leave no explore behind: subprocess.run kills it.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    configs = args.configs.split(",")
    unknown = [c for c in configs if c not in CONFIGS]
    if unknown or args.rounds < 1:
        parser.error(f"unknown configuration(s) {unknown} (known: {', '.join(CONFIGS)}) "
                     "or rounds < 1")  # fmt: skip
    sides = {"before": args.before.resolve(), "after": args.after.resolve()}
    samples: dict[str, dict[str, list[tuple[float, float, int]]]] = {
        config: {"before": [], "after": []} for config in configs
    }
    load = [os.getloadavg()[0]]
    for round_ in range(args.rounds):
        for index, config in enumerate(configs):
            order = ["before", "after"] if (round_ + index) % 2 == 0 else ["after", "before"]
            for side in order:
                wall, cpu, cases = run_once(sides[side], config)
                samples[config][side].append((wall, cpu, cases))
                print(f"round {round_ + 1} {config:8} {side:6} {cases:3} cases "
                      f"{wall / cases * 1000:7.1f} ms/case wall {cpu / cases * 1000:7.1f} "
                      "ms/case cpu", file=sys.stderr, flush=True)  # fmt: skip
    load.append(os.getloadavg()[0])
    print(f"{'config':9} {'cases':>5} {'before ms':>10} {'after ms':>9} {'ratio':>6} "
          f"{'cpu before':>10} {'cpu after':>9} {'ratio':>6}")  # fmt: skip
    summary = {}
    for config in configs:
        row = {}
        for side in ("before", "after"):
            runs = samples[config][side]
            row[side] = (statistics.median(w / c * 1000 for w, _, c in runs),
                         statistics.median(u / c * 1000 for _, u, c in runs))  # fmt: skip
        cases = samples[config]["after"][0][2]
        wall_ratio = row["after"][0] / row["before"][0]
        cpu_ratio = row["after"][1] / row["before"][1]
        summary[config] = {"before_ms": row["before"], "after_ms": row["after"],
                           "wall_ratio": wall_ratio, "cpu_ratio": cpu_ratio}  # fmt: skip
        print(f"{config:9} {cases:5} {row['before'][0]:10.1f} {row['after'][0]:9.1f} "
              f"{wall_ratio:6.3f} {row['before'][1]:10.1f} {row['after'][1]:9.1f} "
              f"{cpu_ratio:6.3f}")  # fmt: skip
    print(f"(medians of {args.rounds} rounds; load average {load[0]:.1f} -> {load[1]:.1f}; "
          f"{os.cpu_count()} CPUs)")  # fmt: skip
    if args.json is not None:
        document = {"samples": samples, "summary": summary, "load": load, "sides": {
            side: str(path) for side, path in sides.items()}}  # fmt: skip
        args.json.write_bytes(orjson.dumps(document, option=orjson.OPT_INDENT_2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
