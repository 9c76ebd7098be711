"""App cases per second: forked by the app fork server vs exec'd.

Issue 21 asks for the cases of an `--app` from a fork server that has
imported the framework and the app once, measured against a fresh
interpreter per child (goal: at least 10x). This runs SIGKILL cases of
`examples/langgraph_refund` on `scenarios/payment.toml` at a few kill points
with `--spawn fork` and `--spawn exec` side by side, one case of each in
turn (the order swapping from case to case, so both see the same load), one
job, after a fault-free run in each mode (the fork side's starts the server,
timed apart). It prints the cases per second of each, the ratio, the CPU
each case used (the lab's, its children's and for fork the server's
children's: on a shared machine the steadier figure), and where a case's
time goes: the two children (start to exit, or to the kill), reading the
persisted thread twice with the framework's serializer (copies included),
and the rest (the case's directory, the gate, the oracle).

    python benchmarks/app_cases.py [--cases N] [--durability sync] [--app FRAMEWORK:MODULE:FACTORY]

`--app` measures another framework's example the same way
(`pydantic-ai:examples.pydantic_ai_refund:build_agent`,
`openai-agents:examples.openai_agents_refund:build_agent`,
`google-adk:examples.google_adk_refund:build_agent`); for those,
reading the store is two more children a case (the app's own loader).
ADK's cases resume in its own style, `resend` (the others: `resume`).

Prints the figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from faultlab.lab.apps import AppOptions, drive, run_app_case, run_app_reference  # noqa: E402
from faultlab.lab.oracle.case import Case  # noqa: E402
from faultlab.lab.process.forkserver import shared_servers  # noqa: E402
from faultlab.scenario import load_scenario  # noqa: E402

APP = "langgraph:examples.langgraph_refund:build_graph"
POINTS = ("model/request#1", "tool/effect#1", "model/request#2", "invoke/end#1")
SPAWNS = ("exec", "fork")

# Seconds spent in the drive's steps, by step, during the timed cases.
_spent: dict[str, float] = {}


def _timed(step: str, method: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return method(*args, **kwargs)
        finally:
            _spent[step] = _spent.get(step, 0.0) + time.perf_counter() - started

    return wrapper


def _instrument() -> None:
    """Time the drive's two costly steps (benchmark only: the drive is not
    changed, its methods are wrapped)."""
    rig = drive.AppRig
    rig.run = _timed("children", rig.run)  # type: ignore[method-assign]
    rig.persisted = _timed("reading", rig.persisted)  # type: ignore[method-assign]


def _cpu(spawn: str) -> float:
    """CPU seconds so far of this process, its reaped children (exec'd
    children come back through their supervisors) and, for fork, the
    server's reaped children."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime
    if spawn == "fork":
        total += sum(server.cpu_seconds() for server in shared_servers())
    return total


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=12)
    parser.add_argument("--app", default=APP, help="FRAMEWORK:MODULE:FACTORY")
    parser.add_argument("--durability", default=None,
                        help="the framework's mode (default: sync for LangGraph, else its default)")
    args = parser.parse_args()
    if args.durability is None:
        args.durability = "sync" if args.app.startswith("langgraph:") else ""
    # ADK goes back into a session by sending the message again (its resume).
    style = "resend" if args.app.startswith("google-adk:") else "resume"
    os.chdir(ROOT)  # the children import the example from the working directory
    scenario = str(ROOT / "scenarios" / "payment.toml")
    _instrument()
    walls: dict[str, list[float]] = {s: [] for s in SPAWNS}
    cpus: dict[str, list[float]] = {s: [] for s in SPAWNS}
    steps: dict[str, dict[str, float]] = {s: {} for s in SPAWNS}
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as work:
        options, references = {}, {}
        for spawn in SPAWNS:
            options[spawn] = AppOptions(args.app, Path(work) / spawn, args.durability, (style,),
                                        spawn=spawn)  # fmt: skip
            args.durability = options[spawn].durability  # the framework's default, when empty
            started = time.monotonic()
            references[spawn] = run_app_reference(scenario, load_scenario(scenario),
                                                  options[spawn])  # fmt: skip
            assert references[spawn].returncode == 0, references[spawn].stderr
            print(f"{spawn}: the fault-free run took {time.monotonic() - started:.2f} s"
                  + (" (starting the server included)" if spawn == "fork" else ""))  # fmt: skip
        for index in range(args.cases):
            point = POINTS[index % len(POINTS)]
            for spawn in SPAWNS if index % 2 == 0 else SPAWNS[::-1]:
                case = Case(scenario, point, f"sigkill/{style}/{args.durability}")
                _spent.clear()
                cpu, started = _cpu(spawn), time.perf_counter()
                result = run_app_case(case, references[spawn], options[spawn])
                walls[spawn].append(time.perf_counter() - started)
                cpus[spawn].append(_cpu(spawn) - cpu)
                assert result.verdict in ("pass", "fail"), (spawn, case.id, result.verdict)
                for step, seconds in _spent.items():
                    steps[spawn][step] = steps[spawn].get(step, 0.0) + seconds
    rates = {s: len(walls[s]) / sum(walls[s]) for s in SPAWNS}
    print(f"{args.cases} cases each, {args.durability}, one job, load average {load:.1f} "
          f"before, {os.getloadavg()[0]:.1f} after ({os.cpu_count()} CPUs)")  # fmt: skip
    for spawn in SPAWNS:
        total = sum(walls[spawn])
        children = steps[spawn].get("children", 0.0)
        reading = steps[spawn].get("reading", 0.0)
        print(f"  {spawn:4}: {rates[spawn]:6.2f} cases/s, median case "
              f"{statistics.median(walls[spawn]) * 1000:6.0f} ms wall, "
              f"{statistics.median(cpus[spawn]) * 1000:5.0f} ms CPU; of its time: the two "
              f"children {children / total:4.0%}, reading the thread {reading / total:4.0%}, "
              f"the rest {(total - children - reading) / total:4.0%}")  # fmt: skip
    wall_ratio = rates["fork"] / rates["exec"]
    cpu_ratio = statistics.median(cpus["exec"]) / statistics.median(cpus["fork"])
    print(f"fork vs exec: {wall_ratio:.1f}x the cases per second "
          f"({'met' if wall_ratio >= 10 else 'NOT met'}: goal 10x), "
          f"{cpu_ratio:.1f}x less CPU per case")  # fmt: skip


if __name__ == "__main__":
    main()
