# The peers benchmark (issue 34, item 6): faultlab's cost per crash case against
# real-kill crash-consistency peers from PyPI, side by side in one run.  It owns
# the scratch venv the peers are pip-installed into, the small job each peer
# crash-tests, the alternating measured rounds (wall and CPU of each side's
# whole process tree), and the table of per-case costs and ratios.  It asserts
# no time: it exits 0 when every side ran, 3 with a one-line error otherwise.
#
#   python3 benchmarks/peers.py [--rounds N] [--json OUT] [--keep-venv DIR]
from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import platform
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import orjson
import psutil

__all__ = [
    "FAULTLAB_ARGS",
    "JOB_SAVES",
    "JOB_SOURCE",
    "PEER",
    "BenchError",
    "Peer",
    "Sample",
    "Summary",
    "faultlab_cases",
    "format_table",
    "main",
    "peer_cases",
    "summarize",
]

REPO = Path(__file__).resolve().parent.parent

# The faultlab side, exactly the command of issue 34 (run from the repository).
FAULTLAB_ARGS = ("explore", "scenarios/payment.toml", "scenarios/chat.toml",
                 "--faults", "sigkill", "-j", "2", "--no-report", "--json")  # fmt: skip
FAULTLAB_FAULT = "sigkill"

# The peer's job: issue 34's atomic-JSON job.  Each of JOB_SAVES saves writes a
# temp file, fsyncs it and renames it over state.json; with the output folder's
# mkdir that is 1 + 2 * JOB_SAVES = 41 file events, of which ckpt-chaos samples
# its 40 kill points.  A restart resumes from the state on disk and says from
# which step (the peer's --step-regex), so every resume is judged for real.
JOB_SAVES = 20
JOB_SOURCE = f'''\
import json, os, sys
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
path = os.path.join(out, "state.json")
state = {{"step": 0, "total": 0}}
if os.path.exists(path):
    with open(path, encoding="utf-8") as f:
        state = json.load(f)
print(f"resumed from step {{state['step']}}", flush=True)
while state["step"] < {JOB_SAVES}:
    state["step"] += 1
    state["total"] += state["step"] * 7
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(state, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
'''


@dataclass(frozen=True, slots=True)
class Peer:
    """A real-kill peer: its pinned PyPI requirement and how to run it on the job."""

    name: str
    requirement: str  # pinned: the figures belong to one version
    kill_points: int
    jobs: int

    def argv(self, venv: Path, work: Path, job: Path) -> list[str]:
        # --modes before: the kill before a file event, the match of faultlab's
        # sigkill (`torn`, a file cut in half, has no counterpart on this side).
        return [str(venv / "bin" / "ckpt-chaos"), "run", "--modes", "before",
                "--max-points", str(self.kill_points), "--jobs", str(self.jobs),
                "--timeout", "120", "--work", str(work),
                "--result-file", "{out}/state.json", "--step-regex", r"resumed from step (\d+)",
                "--", str(venv / "bin" / "python"), str(job), "{out}"]  # fmt: skip


# ckpt-chaos ends the job at the hooked file event with os._exit(137) from
# inside the process (no cleanup, no flush), then restarts it: a real process
# death per point.  PyPI's crashresume 0.1.0 was looked at and left out: it
# restarts an in-process object, no process is killed.
PEER = Peer(name="ckpt-chaos", requirement="ckpt-chaos==0.1.8", kill_points=40, jobs=2)


class BenchError(Exception):
    """Something the benchmark needs failed to run; the message is one line."""


@dataclass(frozen=True, slots=True)
class Sample:
    side: str  # "faultlab" or the peer's name
    round: int
    cases: int  # crash cases the run reported
    wall_s: float
    cpu_s: float  # user + system of the process tree (reaped descendants)
    load: float  # 1-minute load average when the sample started
    strays: int  # descendants still alive after the run, killed and reaped

    @property
    def wall_ms_per_case(self) -> float:
        return 1000.0 * self.wall_s / self.cases

    @property
    def cpu_ms_per_case(self) -> float:
        return 1000.0 * self.cpu_s / self.cases


@dataclass(frozen=True, slots=True)
class Summary:
    """Medians over the rounds, per side, and the peer / faultlab ratios: of the
    medians, and of each round's pair (the spread)."""

    faultlab_wall_ms: float
    faultlab_cpu_ms: float
    peer_wall_ms: float
    peer_cpu_ms: float
    wall_ratio: float
    cpu_ratio: float
    wall_ratio_rounds: tuple[float, ...]
    cpu_ratio_rounds: tuple[float, ...]


_POINTS = re.compile(r"(\d+) file events -> (\d+) crash points")


def peer_cases(output: str) -> int:
    """The crash points ckpt-chaos ran, from its progress line."""
    found = _POINTS.search(output)
    if found is None:
        raise BenchError("ckpt-chaos printed no 'N file events -> M crash points' line")
    return int(found.group(2))


def faultlab_cases(document: Mapping[str, Any]) -> int:
    """The crash cases of an `explore --json` document (its coverage rows are
    not crash cases), checked against the per-fault count it reports."""
    cases = document.get("cases")
    if not isinstance(cases, list):
        raise BenchError("faultlab explore --json printed no 'cases' list")
    crashes = sum(1 for case in cases if case.get("fault") == FAULTLAB_FAULT)
    per_fault = document.get("perFault", {}).get(FAULTLAB_FAULT, {}).get("ran")
    if per_fault != crashes:
        raise BenchError(f"faultlab explore reports {per_fault} {FAULTLAB_FAULT} cases "
                         f"but lists {crashes}")  # fmt: skip
    if crashes == 0:
        raise BenchError("faultlab explore ran no crash case")
    return crashes


def summarize(samples: Sequence[Sample], peer: str) -> Summary:
    mine = [s for s in samples if s.side == "faultlab"]
    theirs = [s for s in samples if s.side == peer]
    if not mine or len(mine) != len(theirs):
        raise BenchError(f"unpaired samples: {len(mine)} faultlab, {len(theirs)} {peer}")

    def median(values: Iterator[float]) -> float:
        return float(statistics.median(values))

    by_round = {s.round: s for s in mine}
    pairs = [(by_round[t.round], t) for t in theirs]
    fw, fc = median(s.wall_ms_per_case for s in mine), median(s.cpu_ms_per_case for s in mine)
    pw, pc = median(s.wall_ms_per_case for s in theirs), median(s.cpu_ms_per_case for s in theirs)
    return Summary(faultlab_wall_ms=fw, faultlab_cpu_ms=fc, peer_wall_ms=pw, peer_cpu_ms=pc,
                   wall_ratio=pw / fw, cpu_ratio=pc / fc,
                   wall_ratio_rounds=tuple(t.wall_ms_per_case / f.wall_ms_per_case
                                           for f, t in pairs),
                   cpu_ratio_rounds=tuple(t.cpu_ms_per_case / f.cpu_ms_per_case
                                          for f, t in pairs))  # fmt: skip


def format_table(samples: Sequence[Sample], summary: Summary, peer: Peer,
                 machine: Mapping[str, Any]) -> str:  # fmt: skip
    rounds = len(summary.wall_ratio_rounds)
    lines = [f"peers: per crash case, median of {rounds} alternating round(s); "
             f"{machine['cpus']} CPUs, load {machine['load_before']:.1f} -> "
             f"{machine['load_after']:.1f} (1-min average; a shared machine)",
             f"{'round':>5}  {'side':<22} {'cases':>5} {'wall s':>7} {'wall ms/case':>12} "
             f"{'CPU ms/case':>11} {'load':>5}"]  # fmt: skip
    for s in sorted(samples, key=lambda s: (s.round, s.side != "faultlab")):
        stray = f"  ({s.strays} stray process(es) killed)" if s.strays else ""
        lines.append(f"{s.round:>5}  {s.side:<22} {s.cases:>5} {s.wall_s:>7.1f} "
                     f"{s.wall_ms_per_case:>12.1f} {s.cpu_ms_per_case:>11.1f} "
                     f"{s.load:>5.1f}{stray}")  # fmt: skip

    def spread(values: tuple[float, ...]) -> str:
        return f"{min(values):.1f}-{max(values):.1f}x over the rounds"

    lines += [f"median  faultlab explore       wall {summary.faultlab_wall_ms:8.1f} ms/case   "
              f"CPU {summary.faultlab_cpu_ms:7.1f} ms/case",
              f"median  {peer.requirement:<22} wall {summary.peer_wall_ms:8.1f} ms/case   "
              f"CPU {summary.peer_cpu_ms:7.1f} ms/case",
              f"ratio   {peer.name} / faultlab: wall {summary.wall_ratio:.1f}x "
              f"({spread(summary.wall_ratio_rounds)}), CPU {summary.cpu_ratio:.1f}x "
              f"({spread(summary.cpu_ratio_rounds)}); issue 34's target: >= 10x both"]  # fmt: skip
    return "\n".join(lines)


# ---- running things --------------------------------------------------------

_PR_SET_CHILD_SUBREAPER = 36


def _become_subreaper() -> bool:
    """Orphans of the measured tools (a process whose parent died first) are
    re-parented to this process rather than to init, so that they are reaped
    here, their CPU is counted and none is left running."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def _reap_exited() -> None:
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass


def _reap_strays(grace_s: float = 2.0) -> int:
    """Give leftover descendants a moment to exit, then kill the ones still
    alive (each by its pid: all are this process's own), and reap them all;
    returns how many had to be killed."""
    me = psutil.Process()
    deadline = time.monotonic() + grace_s
    killed: set[int] = set()
    while True:
        _reap_exited()
        alive = me.children()
        if not alive:
            return len(killed)
        if time.monotonic() >= deadline:
            for child in alive:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(child.pid, signal.SIGKILL)
                killed.add(child.pid)
        time.sleep(0.02)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


Measured = tuple[subprocess.CompletedProcess[bytes], float, float, int]


_RUN_TIMEOUT_S = 1800
_OUTPUT_LIMIT = 64 << 20  # bytes of a side's stdout or stderr that are read


def _measure(argv: Sequence[str], *, cwd: Path, env: Mapping[str, str], what: str) -> Measured:
    """Run `argv` to its end: its result, wall seconds, CPU seconds of its
    whole tree (this process's reaped children before and after) and how many
    stray descendants had to be killed.  Its output goes to files, not pipes:
    an orphan that kept a pipe open would hold the wait (and the wall time)
    until it exited."""
    cpu0 = _children_cpu()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.monotonic()
        try:
            child = subprocess.Popen(list(argv), cwd=cwd, env=dict(env), stdin=subprocess.DEVNULL,
                                     stdout=out, stderr=err, start_new_session=True)  # fmt: skip
        except OSError as error:
            raise BenchError(f"{what} did not start: {error}") from error
        try:
            code = child.wait(timeout=_RUN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, signal.SIGKILL)  # the group this run started
            child.wait()
            _reap_strays()
            raise BenchError(f"{what} ran over {_RUN_TIMEOUT_S} s and was killed") from None
        wall = time.monotonic() - start
        strays = _reap_strays()
        cpu = _children_cpu() - cpu0
        out.seek(0)
        err.seek(0)
        done = subprocess.CompletedProcess(list(argv), code, out.read(_OUTPUT_LIMIT),
                                           err.read(_OUTPUT_LIMIT))  # fmt: skip
    return done, wall, cpu, strays


def _tail(data: bytes) -> str:
    lines = data.decode("utf-8", "replace").strip().splitlines()
    return lines[-1][:200] if lines else "no output"


def _clean_env() -> dict[str, str]:
    # neither this venv nor this tree leaks into the peer's interpreter
    return {k: v for k, v in os.environ.items()
            if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}  # fmt: skip


def _install(peer: Peer, venv: Path) -> str:
    """Make `venv` a venv holding `peer.requirement` (kept and reused when it
    already does); returns the installed version."""
    python = venv / "bin" / "python"
    env = _clean_env()
    version_argv = [str(python), "-c", "import importlib.metadata as m; "
                    f"print(m.version({peer.name!r}))"]  # fmt: skip
    wanted = peer.requirement.split("==", 1)[1]
    if python.exists():
        have = subprocess.run(version_argv, capture_output=True, text=True, env=env, check=False)
        if have.returncode == 0 and have.stdout.strip() == wanted:
            return wanted
    steps = ((f"python3 -m venv {venv}", [sys.executable, "-m", "venv", str(venv)]),
             (f"pip install {peer.requirement}",
              [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check",
               peer.requirement]))  # fmt: skip
    for what, argv in steps:
        print(f"peers: {what}", file=sys.stderr, flush=True)
        done = subprocess.run(argv, capture_output=True, env=env, check=False)
        if done.returncode != 0:
            raise BenchError(f"{what} failed (exit {done.returncode}): {_tail(done.stderr)}")
    have = subprocess.run(version_argv, capture_output=True, text=True, env=env, check=False)
    if have.stdout.strip() != wanted:
        raise BenchError(f"{peer.requirement} not installed in {venv} "
                         f"(found {have.stdout.strip() or 'nothing'})")  # fmt: skip
    return wanted


def _run_peer(peer: Peer, venv: Path, scratch: Path, round_no: int) -> Sample:
    job = scratch / "atomic_json_job.py"
    work = scratch / f"{peer.name}-round{round_no}"  # a fresh --work each run (the peer demands it)
    load = os.getloadavg()[0]
    done, wall, cpu, strays = _measure(peer.argv(venv, work, job), cwd=scratch,
                                       env=_clean_env(), what=peer.name)  # fmt: skip
    shutil.rmtree(work, ignore_errors=True)
    if done.returncode != 0:
        raise BenchError(f"{peer.name} exited {done.returncode} on the atomic-JSON job: "
                         f"{_tail(done.stdout + done.stderr)}")  # fmt: skip
    cases = peer_cases(done.stdout.decode("utf-8", "replace"))
    return Sample(side=peer.name, round=round_no, cases=cases, wall_s=wall, cpu_s=cpu,
                  load=load, strays=strays)  # fmt: skip


def _run_faultlab(round_no: int) -> Sample:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    load = os.getloadavg()[0]
    argv = [sys.executable, "-m", "faultlab", *FAULTLAB_ARGS]
    done, wall, cpu, strays = _measure(argv, cwd=REPO, env=env, what="faultlab explore")
    if done.returncode != 0:
        raise BenchError(f"faultlab {' '.join(FAULTLAB_ARGS[:1])} exited {done.returncode}: "
                         f"{_tail(done.stderr)}")  # fmt: skip
    try:
        document = orjson.loads(done.stdout)
    except orjson.JSONDecodeError as error:
        raise BenchError(f"faultlab explore --json printed no JSON: {error}") from error
    return Sample(side="faultlab", round=round_no, cases=faultlab_cases(document), wall_s=wall,
                  cpu_s=cpu, load=load, strays=strays)  # fmt: skip


def _write_json(out: Path, document: Mapping[str, Any]) -> None:
    tmp = out.with_name(out.name + ".tmp")
    with tmp.open("wb") as handle:
        handle.write(orjson.dumps(document, option=orjson.OPT_INDENT_2))
        handle.flush()
        os.fsync(handle.fileno())
    tmp.replace(out)


def run(*, rounds: int, venv_dir: Path | None, peer: Peer = PEER) -> dict[str, Any]:
    """A warm-up of each side, then `rounds` rounds, the order alternating
    (faultlab first in odd rounds, the peer first in even ones)."""
    subreaper = _become_subreaper()
    with tempfile.TemporaryDirectory(prefix="faultlab-peers-") as tmp:
        scratch = Path(tmp)
        venv = venv_dir if venv_dir is not None else scratch / "venv"
        version = _install(peer, venv)
        (scratch / "atomic_json_job.py").write_text(JOB_SOURCE, encoding="utf-8")
        load_before = os.getloadavg()[0]
        print("peers: warm-up of each side", file=sys.stderr, flush=True)
        _run_faultlab(0)
        _run_peer(peer, venv, scratch, 0)
        samples: list[Sample] = []
        for round_no in range(1, rounds + 1):
            order = ["faultlab", peer.name] if round_no % 2 else [peer.name, "faultlab"]
            for side in order:
                sample = (_run_faultlab(round_no) if side == "faultlab"
                          else _run_peer(peer, venv, scratch, round_no))  # fmt: skip
                samples.append(sample)
                print(f"peers: round {round_no} {sample.side}: {sample.cases} cases, "
                      f"{sample.wall_s:.1f} s", file=sys.stderr, flush=True)  # fmt: skip
        load_after = os.getloadavg()[0]
    machine = {"cpus": os.cpu_count(), "python": platform.python_version(),
               "platform": platform.platform(), "load_before": load_before,
               "load_after": load_after, "subreaper": subreaper}  # fmt: skip
    summary = summarize(samples, peer.name)
    return {"peer": {**asdict(peer), "version": version}, "faultlab_argv": list(FAULTLAB_ARGS),
            "machine": machine, "samples": [asdict(s) for s in samples],
            "summary": asdict(summary),
            "table": format_table(samples, summary, peer, machine)}  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="faultlab explore vs real-kill peers (ckpt-chaos): wall and CPU per crash case")
    parser.add_argument("--rounds", type=int, default=3,
                        help="measured rounds per side (default 3)")  # fmt: skip
    parser.add_argument("--json", type=Path, metavar="OUT",
                        help="write every sample and the summary here (JSON)")  # fmt: skip
    parser.add_argument("--keep-venv", type=Path, metavar="DIR",
                        help="build the scratch venv in DIR and keep it (reused when it holds "
                             "the pinned peer already)")  # fmt: skip
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error(f"--rounds must be at least 1 (got {args.rounds})")
    if args.json is not None and not args.json.resolve().parent.is_dir():
        parser.error(f"--json: no directory {args.json.resolve().parent}")
    if args.keep_venv is not None and args.keep_venv.exists() and not args.keep_venv.is_dir():
        parser.error(f"--keep-venv: {args.keep_venv} exists and is not a directory")
    try:
        document = run(rounds=args.rounds,
                       venv_dir=None if args.keep_venv is None else args.keep_venv.resolve())
    except BenchError as error:
        print(f"peers: error: {error}", file=sys.stderr)
        return 3
    print(document["table"])
    if args.json is not None:
        _write_json(args.json, document)
    return 0


if __name__ == "__main__":
    sys.exit(main())
