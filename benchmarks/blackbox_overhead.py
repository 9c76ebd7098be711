"""What a black-box case costs on top of the agent's own processes.

A case's wall time is the agent's processes (their start, their run against
the scripted model and tools) plus what faultlab adds: the model server, the
gate and its socket, the MCP config, the supervisor that contains the tree,
the kill, copying the agent's session, the oracle.  The drive notes when each
agent process is running (its supervisor reported it started) and when it
ended or the kill was issued (`agent/running`, `agent/ended` in the case's
records), so both are measured in the same case, side by side:

    overhead = (case wall time - time inside agent processes) / time inside agent processes

    python benchmarks/blackbox_overhead.py [--agent reference] [--cases N]

Prints one row per case and the median ratio (issue 20's target: under 10%).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from faultlab import lab  # noqa: E402

POINTS = ("tool/applied#1@0", "model/request#1@0", "tool/replied#1@200ms", "model/chunk#2@0")


def _agent_seconds(records_path: Path) -> float:
    started: dict[int, float] = {}
    total = 0.0
    for line in records_path.read_bytes().splitlines():
        record = orjson.loads(line)
        if record.get("fact") == "agent/running":
            started[int(record["run"])] = float(record["t"])
        elif record.get("fact") == "agent/ended":
            total += float(record["t"]) - started.pop(int(record["run"]), float(record["t"]))
    return total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agent", default="reference")
    parser.add_argument("--cases", type=int, default=len(POINTS))
    parser.add_argument("--scenario", default=str(ROOT / "scenarios" / "payment.toml"))
    args = parser.parse_args()
    ratios = []
    print(f"{'case':36} {'wall s':>7} {'agent s':>8} {'added s':>8} {'ratio':>6}")
    for index in range(args.cases):
        point = POINTS[index % len(POINTS)]
        with tempfile.TemporaryDirectory() as work:
            started = time.monotonic()
            result = lab.run_agent_case(args.scenario, point, agent=args.agent,
                                        workdir=Path(work))  # fmt: skip
            # The single case runs the fault-free reference first: only the
            # case itself is compared with its own agent processes.
            wall = result.seconds
            agent = _agent_seconds(Path(result.artifacts["records"]))
            total = time.monotonic() - started
        ratio = (wall - agent) / agent if agent else float("nan")
        ratios.append(ratio)
        print(f"{point:36} {wall:7.2f} {agent:8.2f} {wall - agent:8.2f} {ratio:6.1%}"
              f"   ({result.verdict}; with its reference run {total:.1f} s)")  # fmt: skip
    print(f"median added cost: {statistics.median(ratios):.1%} of the agent's own time "
          "(target: under 10%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
