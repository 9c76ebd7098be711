# Issue 4's crash-loop figure: SIGKILL cases of payment.toml per second with
# the fork server (forking ahead; for information on request, and with cold
# children) vs exec, and a fork case against the bare fork-park-kill floor
# sampled between the same rounds' cases.  Measurement only, no verdict: the
# targets and the table are `faultlab.bench.report`'s.
from __future__ import annotations

import gc
import os
import signal
import statistics
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from faultlab import lab
from faultlab.bench.common import BenchError, Say, median, quiet
from faultlab.lab.campaigns.explore import COVERAGE, plan_cases, run_one
from faultlab.lab.oracle.case import Case
from faultlab.lab.process.reference import LabOptions, Reference

__all__ = ["CrashLoop", "crash_loop"]


@dataclass(frozen=True, slots=True)
class CrashLoop:
    """SIGKILL cases of one scenario, fork vs exec, and the bare fork floor.

    ``*_seconds`` hold one sample per round: the time of all ``cases`` in
    that mode, each case run in every mode back to back (the order rotates),
    followed by a slice of the floor.  ``fork`` is the default fork server
    (children forked ahead of the requests, warming up while they wait);
    ``on_request`` the same server forking only when asked and ``cold`` one
    whose children do not warm up (for information: what forking ahead and
    the warm-up give one job).  The floor is the median of
    ``floor_repetitions`` fork + park + SIGKILL + reap.
    """

    scenario: str
    cases: int
    rounds: int
    fork_seconds: tuple[float, ...]
    on_request_seconds: tuple[float, ...]
    cold_seconds: tuple[float, ...]
    exec_seconds: tuple[float, ...]
    verdicts: dict[str, int]
    fork_cases_per_s: float
    on_request_cases_per_s: float
    exec_cases_per_s: float
    fork_vs_exec: float
    fork_vs_on_request: float
    fork_vs_cold: float
    fork_ms_per_case: float
    on_request_ms_per_case: float
    cold_ms_per_case: float
    exec_ms_per_case: float
    floor_ms: float
    # The floor's median within each round (its samples are taken between
    # that round's cases), so that each round's fork case has a floor
    # measured beside it: `faultlab.bench.report` shows the spread of the
    # per-round ratios next to the target.
    floor_round_ms: tuple[float, ...]
    floor_repetitions: int
    floor_parent_rss_mb: float | None  # a fork's cost grows with the parent's size
    fork_case_vs_floor: float
    # A SIGKILL case is several processes (crash, repair, resume): the mean
    # count per fork case, and the fork case per process against the floor.
    processes_per_case: float
    fork_process_vs_floor: float


def _fork_park_kill() -> float:
    """Seconds to fork a trivial child in its own process group, see it park
    on a pipe, SIGKILL its group and reap it."""
    started = time.perf_counter()
    ready_r, ready_w = os.pipe()
    park_r, park_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: raw system calls only, then _exit
        try:
            os.close(ready_r)
            os.close(park_w)  # so that EOF arrives if the parent dies
            os.setpgid(0, 0)
            os.write(ready_w, b"r")
            os.read(park_r, 1)
        finally:
            os._exit(0)
    try:
        os.close(ready_w)
        os.close(park_r)
        os.read(ready_r, 1)  # parked, in its own group (set before it wrote)
        os.killpg(pid, signal.SIGKILL)
    finally:
        os.waitpid(pid, 0)
        os.close(ready_r)
        os.close(park_w)
    return time.perf_counter() - started


def _rss_mb() -> float | None:
    """This process's resident set size now (Linux), in MB."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return pages * os.sysconf("SC_PAGE_SIZE") / 1e6


# The crash loop's modes: (name, spawn, children kept forked ahead, warm-up).
_MODES = (
    ("fork", "fork", None, True),
    ("on_request", "fork", 0, True),
    ("cold", "fork", None, False),
    ("exec", "exec", None, True),
)


def crash_loop(quick: bool, *, say: Say = quiet) -> CrashLoop:
    """Crash cases per second of payment.toml with spawn fork vs exec (and
    fork without forking ahead), and the fork case's cost as a multiple of
    the bare fork-and-kill floor."""
    scenario = str(lab.bundled_scenarios() / "payment.toml")
    rounds, floor_per_round = (2, 200) if quick else (3, 1000)
    with lab.workdir() as work:
        references: dict[str, Reference] = {}
        options: dict[str, LabOptions] = {}
        for mode, spawn, ahead, warm in _MODES:
            references[mode] = lab.reference_run(scenario, workdir=work / mode, spawn=spawn)
            if references[mode].returncode != 0:
                raise BenchError(f"the {mode} reference run of {scenario} failed")
            options[mode] = LabOptions(
                lab.make_target(), work / mode, 60.0, spawn, ahead, fork_warm=warm
            )
        cases = [c for c in plan_cases(references["fork"]) if c.occurrence != COVERAGE]
        if quick:  # a handful, spread over the run
            cases = cases[:: max(1, len(cases) // 3)][:3]
        verdicts: Counter[str] = Counter()
        floor: list[list[float]] = []  # per round
        floor_per_case = -(-floor_per_round // len(cases))
        names = [mode for mode, _spawn, _ahead, _warm in _MODES]

        children: list[int] = []  # processes per fork case (each left its stderr file)

        def timed_case(mode: str, case: Case) -> float:
            started = time.perf_counter()
            result = run_one(case, references[mode], options[mode])
            seconds = time.perf_counter() - started
            verdicts[result.verdict] += 1
            if mode == "fork" and "dir" in result.artifacts:
                children.append(len(list(Path(result.artifacts["dir"]).glob("*.stderr"))))
            return seconds

        def one_round(round_: int) -> dict[str, float]:
            # Finest interleaving: each case in every mode, the order
            # rotating from case to case, then a slice of the floor.
            totals = dict.fromkeys(names, 0.0)
            floor.append([])
            for index, case in enumerate(cases):
                shift = (index + round_) % len(names)
                for mode in names[shift:] + names[:shift]:
                    totals[mode] += timed_case(mode, case)
                floor[-1].extend(_fork_park_kill() for _ in range(floor_per_case))
            say(
                f"crash loop round {round_ + 1}/{rounds}: {len(cases)} case(s), "
                + ", ".join(f"{mode} {totals[mode]:.2f}s" for mode in names)
            )
            return totals

        for mode in names:  # warm up: the fork servers, imports, page cache
            run_one(cases[0], references[mode], options[mode])
        rss = _rss_mb()
        samples: dict[str, list[float]] = {mode: [] for mode in names}
        for round_ in range(rounds):
            gc.collect()
            for mode, seconds in one_round(round_).items():
                samples[mode].append(seconds)
    medians = {mode: median(samples[mode]) for mode in names}
    per_case_ms = {mode: medians[mode] / len(cases) * 1000 for mode in names}
    floor_ms = median([seconds for one in floor for seconds in one]) * 1000
    processes = statistics.fmean(children) if children else 0.0
    return CrashLoop(
        scenario=Path(scenario).name,
        cases=len(cases),
        rounds=rounds,
        fork_seconds=tuple(samples["fork"]),
        on_request_seconds=tuple(samples["on_request"]),
        cold_seconds=tuple(samples["cold"]),
        exec_seconds=tuple(samples["exec"]),
        verdicts=dict(verdicts),
        fork_cases_per_s=len(cases) / medians["fork"],
        on_request_cases_per_s=len(cases) / medians["on_request"],
        exec_cases_per_s=len(cases) / medians["exec"],
        fork_vs_exec=medians["exec"] / medians["fork"],
        fork_vs_on_request=medians["on_request"] / medians["fork"],
        fork_vs_cold=medians["cold"] / medians["fork"],
        fork_ms_per_case=per_case_ms["fork"],
        on_request_ms_per_case=per_case_ms["on_request"],
        cold_ms_per_case=per_case_ms["cold"],
        exec_ms_per_case=per_case_ms["exec"],
        floor_ms=floor_ms,
        floor_round_ms=tuple(median(one) * 1000 for one in floor),
        floor_repetitions=sum(map(len, floor)),
        floor_parent_rss_mb=rss,
        fork_case_vs_floor=per_case_ms["fork"] / floor_ms,
        processes_per_case=processes,
        fork_process_vs_floor=per_case_ms["fork"] / processes / floor_ms if processes else 0.0,
    )
