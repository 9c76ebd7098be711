# What forking the MCP tool server saves a black-box agent case
# (faultlab/lab/servers/toolrelay.py): `faultlab explore SCENARIO --agent
# AGENT --faults sigkill --delays 0 -j 2 --no-report --json` with the tool
# server forked (the default) and exec'd by the agent (FAULTLAB_TOOL_FORK=0),
# in alternating order round after round; per crash case, medians of wall and
# CPU time (the command and every process it waited for, the tool fork server
# and its children included) and forked / exec'd, and whether both sides
# gave the same verdict and codes case by case.  Never asserts a time; on a
# shared machine only the ratios mean something.
#
#   python3 benchmarks/tool_fork.py [--agent reference] [--rounds 3] [SCENARIO]
from __future__ import annotations

import argparse
import os
import resource
import signal
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import orjson

__all__: list[str] = []

_ROOT = Path(__file__).resolve().parent.parent
_EXECD = "exec'd"


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("scenario", nargs="?", default=str(_ROOT / "scenarios" / "payment.toml"))
    parser.add_argument("--agent", default="reference")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("rounds must be >= 1")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # subprocess.run kills its child
    command = [sys.executable, "-m", "faultlab", "explore", args.scenario, "--agent",
               args.agent, "--faults", "sigkill", "--delays", "0", "-j", "2", "--no-report",
               "--json"]  # fmt: skip

    def explore(side: str) -> tuple[float, float, dict[str, tuple[str, ...]]]:
        env = {**os.environ, "PYTHONPATH": str(_ROOT)}
        env.pop("FAULTLAB_TOOL_FORK", None)
        if side == "exec'd":
            env["FAULTLAB_TOOL_FORK"] = "0"
        cpu, started = _children_cpu(), time.perf_counter()
        done = subprocess.run(command, env=env, capture_output=True, timeout=3600, check=False)
        wall, cpu = time.perf_counter() - started, _children_cpu() - cpu
        if done.returncode not in (0, 1):
            raise SystemExit(f"explore: exit {done.returncode}\n{done.stderr.decode()[-2000:]}")
        cases = orjson.loads(done.stdout)["cases"]
        verdicts = {c["id"]: (c["verdict"], *sorted(c.get("codes") or ())) for c in cases
                    if c.get("fault") != "reference"}  # fmt: skip
        return wall, cpu, verdicts

    samples: dict[str, list[tuple[float, float]]] = {"forked": [], "exec'd": []}
    seen: dict[str, list[dict[str, tuple[str, ...]]]] = {"forked": [], "exec'd": []}
    load = [os.getloadavg()[0]]
    for round_ in range(args.rounds):
        for side in ("forked", "exec'd") if round_ % 2 == 0 else ("exec'd", "forked"):
            wall, cpu, verdicts = explore(side)
            per = max(len(verdicts), 1)
            samples[side].append((wall / per, cpu / per))
            seen[side].append(verdicts)
            print(f"round {round_ + 1} {side:7} {len(verdicts):3} cases {1000 * wall / per:8.1f} "
                  f"ms wall/case {1000 * cpu / per:8.1f} ms CPU/case", flush=True)  # fmt: skip
    load.append(os.getloadavg()[0])
    wall = {side: statistics.median(w for w, _ in runs) for side, runs in samples.items()}
    cpu = {side: statistics.median(c for _, c in runs) for side, runs in samples.items()}
    print(f"{args.agent}: per crash case, median of {args.rounds} alternating round(s); "
          f"load {load[0]:.1f} -> {load[1]:.1f}")
    for side in samples:
        print(f"median {side:7} wall {1000 * wall[side]:8.1f} ms/case   "
              f"CPU {1000 * cpu[side]:8.1f} ms/case")  # fmt: skip
    print(f"ratio forked / exec'd: wall {wall['forked'] / wall[_EXECD]:.2f}x, "
          f"CPU {cpu['forked'] / cpu[_EXECD]:.2f}x")
    ids = set().union(*seen["forked"], *seen["exec'd"])
    steady = {i for i in ids if len({v.get(i) for side in seen.values() for v in side}) == 1}
    print(f"cases with one outcome in every run of both sides: {len(steady)}/{len(ids)}")
    for case_id in sorted(ids - steady):  # a race, on one side or both: the runs' outcomes
        counts = {side: Counter(" ".join(v.get(case_id, ("missing",))) for v in runs)
                  for side, runs in seen.items()}  # fmt: skip
        print(f"  {case_id}: " + "; ".join(
            f"{side} " + ", ".join(f"{n}x {outcome}" for outcome, n in sorted(c.items()))
            for side, c in counts.items()))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
