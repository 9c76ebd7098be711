"""What one LangGraph app case costs with a fresh interpreter per child.

Issue 21 asks for cases of an `--app` from a fork server that has imported
the framework and the app once, measured against fresh interpreters (goal:
10x). The fork server is not built yet; this measures the exec side, the
baseline it would be compared with: the cases per second of the example app
at a few kill points, and the CPU one child spends importing the framework
and the app (what a fork server would save, twice per case).

    python benchmarks/app_cases.py [--cases N] [--durability sync]

Prints the figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from faultlab.lab.apps import AppOptions, run_app_case, run_app_reference  # noqa: E402
from faultlab.lab.oracle.case import Case  # noqa: E402
from faultlab.scenario import load_scenario  # noqa: E402

APP = "langgraph:examples.langgraph_refund:build_graph"
POINTS = ("model/request#1", "tool/effect#1", "model/request#2", "invoke/end#1")


def _import_cpu() -> float:
    """CPU seconds of a child that only imports what an app child imports."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-c", "import faultlab.lab.apps.lgchild, "
                    "examples.langgraph_refund"], cwd=ROOT, check=True)  # fmt: skip
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=8)
    parser.add_argument("--durability", default="sync")
    args = parser.parse_args()
    scenario = str(ROOT / "scenarios" / "payment.toml")
    with tempfile.TemporaryDirectory() as work:
        options = AppOptions(APP, Path(work), args.durability, ("resume",))
        reference = run_app_reference(scenario, load_scenario(scenario), options)
        started, seconds = time.monotonic(), []
        for index in range(args.cases):
            case = Case(scenario, POINTS[index % len(POINTS)], f"sigkill/resume/{args.durability}")
            seconds.append(run_app_case(case, reference, options).seconds)
        wall = time.monotonic() - started
    imports = [_import_cpu() for _ in range(3)]
    print(f"exec: {args.cases} cases in {wall:.1f} s = {args.cases / wall:.2f} cases/s "
          f"(median case {statistics.median(seconds):.2f} s, two children each)")
    print(f"one child's import of langgraph + the app: {statistics.median(imports):.2f} s CPU")
    print("fork server: not built (docs/decisions.md, issue 21)")


if __name__ == "__main__":
    main()
