"""A black-box agent under faultlab against the same agent driven plainly.

Issue 33's overhead figure: for each agent, in alternating rounds in one
run, the wall time of

- **faultlab**: `explore --agent A SCENARIO` holding only the fault-free
  case (the coverage case: the agent runs the scenario to its end under its
  supervisor, with the gate, the session copies and the oracle);
- **plain**: the same agent process(es), the same adapter commands and
  config files, against the same scripted model server and MCP tool server,
  started with `subprocess.run` and timed to their exit: nothing of
  faultlab's supervision, containment, session reading or judging.

Both start their servers and the agent from nothing, so the ratio is what
faultlab adds to the agent's own run.  Not part of `faultlab bench`.

    python benchmarks/agent_plain.py [--agent NAME ...] [--rounds 3] [--warmup 1]
                                     [--scenario PATH]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from faultlab import lab  # noqa: E402
from faultlab.lab.agents import find_adapter, installed  # noqa: E402
from faultlab.lab.agents.launch import CaseWiring, agent_launcher  # noqa: E402
from faultlab.lab.campaigns.select import Selection  # noqa: E402
from faultlab.lab.servers.rig import ServerRig  # noqa: E402
from faultlab.scenario import load_scenario  # noqa: E402

AGENTS = ("reference", "claude-code", "claude-agent-sdk", "codex", "openai-agents", "gemini-cli",
          "opencode", "qwen-code", "deepseek-harness")  # fmt: skip
TIMEOUT = 180.0


def under_faultlab(agent: str, path: str, work: Path) -> tuple[float, str]:
    scenario = load_scenario(path)
    coverage = f"{Path(path).name}::coverage[reference]"
    started = time.monotonic()
    explored = lab.explore_agent([(path, scenario)], agent=agent, workdir=work,
                                 timeout=TIMEOUT, delays_ms=(0,),
                                 select=Selection(ids=frozenset({coverage})))  # fmt: skip
    wall = time.monotonic() - started
    verdicts = ",".join(r.verdict for r in explored.results)
    return wall, verdicts


def plain(agent: str, path: str, work: Path) -> tuple[float, str]:
    scenario = load_scenario(path)
    launcher = agent_launcher(agent)
    started = time.monotonic()
    statuses = []
    with ServerRig(work / "case", None, timeout=TIMEOUT, model=scenario,
                   naming=launcher.tool_naming) as rig:  # fmt: skip
        wiring = CaseWiring(work / "case" / "agent", rig.model_url, rig.tool_server(path),
                            str(uuid.uuid4()), rig.model_key)  # fmt: skip
        wiring.directory.mkdir()
        prepared = launcher.prepare(wiring)
        for turn, spec in enumerate(scenario.turns):
            command = prepared.first(spec.user) if turn == 0 else prepared.resume(spec.user)
            done = subprocess.run(list(command.argv), env=command.env,
                                  cwd=command.cwd or wiring.directory,
                                  stdin=subprocess.DEVNULL, capture_output=True,
                                  timeout=TIMEOUT, check=False)  # fmt: skip
            statuses.append(str(done.returncode))
    return time.monotonic() - started, "exit " + ",".join(statuses)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agent", action="append", help="repeatable; default: every installed")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=1,
                        help="untimed runs of each side first (the first run of an agent "
                             "pays for a cold page cache; default 1)")
    parser.add_argument("--scenario", default=str(ROOT / "scenarios" / "payment.toml"))
    args = parser.parse_args()
    chosen = args.agent or [a for a in AGENTS
                            if a == "reference" or installed(find_adapter(a)) is not None]
    print(f"{'agent':14} {'faultlab s':>10} {'plain s':>8} {'ratio':>6}  rounds")
    for agent in chosen:
        sides: dict[str, list[float]] = {"faultlab": [], "plain": []}
        notes: list[str] = []
        for _ in range(args.warmup):
            for run in (under_faultlab, plain):
                with tempfile.TemporaryDirectory() as work:
                    run(agent, args.scenario, Path(work))
        for round_ in range(args.rounds):
            order = ("faultlab", "plain") if round_ % 2 == 0 else ("plain", "faultlab")
            for side in order:
                with tempfile.TemporaryDirectory() as work:
                    run = under_faultlab if side == "faultlab" else plain
                    seconds, note = run(agent, args.scenario, Path(work))
                sides[side].append(seconds)
                notes.append(f"{side} {seconds:.2f}s ({note})")
        ours, theirs = statistics.median(sides["faultlab"]), statistics.median(sides["plain"])
        print(f"{agent:14} {ours:10.2f} {theirs:8.2f} {ours / theirs:5.2f}x  "
              + "; ".join(notes), flush=True)  # fmt: skip
    print("target: faultlab at most 1.1x the plain driver (issue 33)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
