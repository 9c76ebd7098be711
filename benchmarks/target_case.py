# Where the time of a `--target` case goes (issue 34, item 4: "a --target
# case within 1.3x of two bare `python3 -c pass` starts plus the target's
# own run").  Side by side in one run, round after round, medians of wall
# and CPU time (the command and every process it waited for):
#   floor      two bare `python3 -c pass` starts (the base interpreter, no
#              venv's site) plus the target's own run of the scenario, with
#              no lab (TARGET SCENARIO --session-dir DIR)
#   case       `faultlab explore SCENARIO --target TARGET --faults sigkill
#              -j 1 --no-report`, per case (its start-up and reference run
#              spread over the cases)
#   run        `faultlab run SCENARIO --target TARGET --at AT`: one case,
#              the whole command
# and the parts of a case: one start of the per-case supervisor
# (ContainedProcess.start of /bin/true, to its end) against a bare
# `python3 -I -S -c pass` (what a supervisor's interpreter costs at least);
# a sigkill case of a --target starts three (crash, repair, resume).
# Prints case/floor and run/floor.  Never asserts a time; on a shared
# machine only the ratios mean something.
#
#   python3 benchmarks/target_case.py [--target CMD] [--scenario FILE] [--at OCC]
#       [--rounds N] [--json OUT]
from __future__ import annotations

import argparse
import os
import resource
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import orjson

from faultlab.lab.process.tree import ContainedProcess

__all__: list[str] = []

_ROOT = Path(__file__).resolve().parent.parent


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _timed(work: Callable[[], int]) -> tuple[float, float, int]:
    """(wall s, CPU s of this process and its reaped children, count) of `work`."""
    cpu = _children_cpu() + _own_cpu()
    started = time.perf_counter()
    count = work()
    return time.perf_counter() - started, _children_cpu() + _own_cpu() - cpu, count


def _base_python() -> str:
    """The interpreter a bare `python3` is: the venv's base, without its site."""
    base = Path(sys.base_prefix) / "bin" / "python3"
    return str(base) if base.exists() else sys.executable


def _run(argv: list[str], **kwargs: object) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(argv, capture_output=True, timeout=3600, check=False, **kwargs)  # type: ignore[call-overload, no-any-return]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--target", default=f"{sys.executable} -m faultlab.runtime")
    parser.add_argument("--scenario", default=str(_ROOT / "scenarios" / "payment.toml"))
    parser.add_argument("--at", default="tool/effect#1")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("rounds must be >= 1")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # subprocess.run kills its child
    target = shlex.split(args.target)
    python = _base_python()
    env = {**os.environ, "PYTHONPATH": str(_ROOT)}
    faultlab = [sys.executable, "-m", "faultlab"]
    scratch = Path(tempfile.mkdtemp(prefix="faultlab-target-case-"))

    def floor() -> int:
        for _ in range(2):
            _run([python, "-c", "pass"])
        session = tempfile.mkdtemp(dir=scratch)
        done = _run([*target, args.scenario, "--session-dir", session], env=env)
        if done.returncode != 0:
            raise SystemExit(f"the target's own run failed: {done.stderr.decode()[-2000:]}")
        return 1

    def case() -> int:
        done = _run([*faultlab, "explore", args.scenario, "--target", args.target,
                     "--faults", "sigkill", "-j", "1", "--no-report", "--json"],
                    env=env, cwd=scratch)  # fmt: skip
        if done.returncode not in (0, 1):
            raise SystemExit(f"explore: exit {done.returncode}\n{done.stderr.decode()[-2000:]}")
        return len(orjson.loads(done.stdout)["cases"])

    def one_run() -> int:
        done = _run([*faultlab, "run", args.scenario, "--target", args.target, "--at", args.at],
                    env=env, cwd=scratch)  # fmt: skip
        if done.returncode not in (0, 1):
            raise SystemExit(f"run: exit {done.returncode}\n{done.stderr.decode()[-2000:]}")
        return 1

    def supervisor() -> int:
        for _ in range(10):
            with ContainedProcess.start(["/bin/true"], cwd=scratch, env=os.environ,
                                        stdin_path=None, stdout_path=os.devnull,
                                        stderr_path=os.devnull) as proc:  # fmt: skip
                proc.wait(30)
        return 10

    def bare_interpreter() -> int:
        for _ in range(10):
            _run([python, "-I", "-S", "-c", "pass"])
        return 10

    parts = {"floor": floor, "case": case, "run": one_run, "supervisor": supervisor,
             "python -I -S": bare_interpreter}  # fmt: skip
    samples: dict[str, list[tuple[float, float, int]]] = {name: [] for name in parts}
    load = [os.getloadavg()[0]]
    try:
        for round_ in range(args.rounds):
            names = list(parts) if round_ % 2 == 0 else list(reversed(parts))
            for name in names:
                wall, cpu, count = _timed(parts[name])
                samples[name].append((wall, cpu, count))
                print(f"round {round_ + 1} {name:12} {wall / count * 1000:8.1f} ms wall "
                      f"{cpu / count * 1000:8.1f} ms cpu (each of {count})",
                      file=sys.stderr, flush=True)  # fmt: skip
    finally:
        subprocess.run(["rm", "-rf", str(scratch)], check=False)
    load.append(os.getloadavg()[0])
    medians = {
        name: (statistics.median(w / c * 1000 for w, _, c in runs),
               statistics.median(u / c * 1000 for _, u, c in runs))
        for name, runs in samples.items()
    }  # fmt: skip
    print(f"target: {args.target}; scenario {Path(args.scenario).name}")
    print(f"{'part':14} {'wall ms':>9} {'cpu ms':>9}")
    for name, (wall, cpu) in medians.items():
        print(f"{name:14} {wall:9.1f} {cpu:9.1f}")
    ratios = {
        f"{name}/floor": (medians[name][0] / medians["floor"][0],
                          medians[name][1] / medians["floor"][1])
        for name in ("case", "run")
    }  # fmt: skip
    for label, (wall, cpu) in ratios.items():
        print(f"ratio {label:11} wall {wall:5.2f}x  cpu {cpu:5.2f}x   (issue 34: <= 1.3x)")
    sup, bare = medians["supervisor"], medians["python -I -S"]
    print(f"ratio supervisor/python -I -S: wall {sup[0] / bare[0]:5.2f}x  "
          f"cpu {sup[1] / bare[1]:5.2f}x")  # fmt: skip
    print(f"(medians of {args.rounds} rounds; load average {load[0]:.1f} -> {load[1]:.1f}; "
          f"{os.cpu_count()} CPUs)")  # fmt: skip
    if args.json is not None:
        document = {"samples": samples, "medians_ms": medians, "ratios": ratios, "load": load,
                    "target": args.target, "scenario": args.scenario}  # fmt: skip
        args.json.write_bytes(orjson.dumps(document, option=orjson.OPT_INDENT_2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
