# The cost of ground truth from the system (issue 19): the fault-free
# reference run of a scenario traced under strace against the same run
# untraced (forked from the fork server, and exec'd), measured in rounds
# side by side; and the two ways of tracing it (issue 34): exec'd under
# strace, and forked with strace attached (faultlab/lab/process/tracefork.py),
# in wall time and in CPU time (the lab, its children and the fork servers'
# children).  The traced run happens once per scenario, so its cost is paid
# once per exploration (once per example in a fuzz campaign), not per case.
from __future__ import annotations

import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from faultlab.bench.common import BenchError, Say, median, quiet

__all__ = ["SyscallTrace", "syscall_trace"]


@dataclass(frozen=True)
class SyscallTrace:
    """Seconds per reference run of one scenario: forked, exec'd, exec'd
    under strace, forked with strace attached; the ratios of the medians;
    CPU seconds per run of each kind (median of the rounds)."""

    scenario: str
    rounds: int
    fork_seconds: list[float]
    exec_seconds: list[float]
    traced_seconds: list[float]
    traced_vs_fork: float
    traced_vs_exec: float
    syscall_facts: int
    traced_fork_seconds: list[float]
    traced_exec_vs_traced_fork: float
    cpu_seconds: dict[str, float]
    traced_exec_vs_traced_fork_cpu: float


def syscall_trace(quick: bool, *, say: Say = quiet) -> SyscallTrace:
    from faultlab.bench.explorejobs import _lab_cpu_seconds
    from faultlab.lab.process.reference import LabOptions, run_reference
    from faultlab.lab.process.syscalls import strace_path
    from faultlab.lab.process.target import bundled_scenarios, reference_target
    from faultlab.scenario import load_scenario

    if strace_path() is None:
        raise BenchError("syscall_trace needs strace, which is not installed")
    path = str((bundled_scenarios() / "payment.toml").resolve())
    scenario = load_scenario(path)
    rounds = 3 if quick else 9
    say(f"syscall trace: {rounds} round(s) of forked, exec'd and traced reference runs")
    # "traced": exec'd under strace; "traced-fork": forked, strace attached.
    times: dict[str, list[float]] = {"fork": [], "exec": [], "traced": [], "traced-fork": []}
    cpu: dict[str, list[float]] = {kind: [] for kind in times}
    facts = 0
    where = Path(tempfile.mkdtemp(prefix="faultlab-bench-trace-"))
    try:
        for _ in range(rounds):
            for kind in times:  # interleaved: a load spike hits every kind alike
                options = LabOptions(
                    reference_target(), where / kind, 60.0,
                    "fork" if kind in ("fork", "traced-fork") else "exec",
                    ground_truth="syscalls" if kind.startswith("traced") else "facts",
                    # every traced run traced anew: a cache hit (tracecache.py)
                    # is benchmarks/trace_cache.py's figure, not this one
                    trace_cache=False,
                )  # fmt: skip
                began, cpu_began = time.perf_counter(), _lab_cpu_seconds()
                reference = run_reference(path, scenario, options)
                times[kind].append(time.perf_counter() - began)
                cpu[kind].append(_lab_cpu_seconds() - cpu_began)
                if reference.returncode != 0:
                    raise BenchError(f"the {kind} reference run failed: {reference.stderr}")
                facts = max(facts, len(reference.syscalls))
    finally:
        shutil.rmtree(where, ignore_errors=True)
    traced = median(times["traced"])
    cpu_median = {kind: round(median(samples), 4) for kind, samples in cpu.items()}
    return SyscallTrace(
        scenario=Path(path).name,
        rounds=rounds,
        fork_seconds=times["fork"],
        exec_seconds=times["exec"],
        traced_seconds=times["traced"],
        traced_vs_fork=round(traced / median(times["fork"]), 2),
        traced_vs_exec=round(traced / median(times["exec"]), 2),
        syscall_facts=facts,
        traced_fork_seconds=times["traced-fork"],
        traced_exec_vs_traced_fork=round(traced / median(times["traced-fork"]), 2),
        cpu_seconds=cpu_median,
        traced_exec_vs_traced_fork_cpu=round(
            cpu_median["traced"] / max(cpu_median["traced-fork"], 1e-6), 2
        ),
    )
