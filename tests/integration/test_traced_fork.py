# The reference run traced from the fork server (issue 34, item 1;
# faultlab/lab/process/tracefork.py): a forked child waits for its tracer,
# the lab attaches strace and lets it go.  Its file facts must be the ones
# an interpreter exec'd under strace shows (the fidelity reference), on
# every kind of scenario, whether the child is the init of a PID namespace
# of its own or not (faultlab/forking/contain.py); the forked child must
# really have been traced from its first call; and where strace cannot
# attach, the lab falls back to the exec'd trace with the same ground truth.
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from faultlab import lab
from faultlab.lab.process import reference as reference_module
from faultlab.lab.process.drift import drift, normalized
from faultlab.lab.process.reference import (
    LabOptions,
    Reference,
    make_child,
    run_reference,
    run_to_exit,
)
from faultlab.lab.process.syscalls import parse_strace
from faultlab.lab.process.tracefork import Tracer, attach
from faultlab.probe import RELEASED
from faultlab.scenario import load_scenario

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [
    pytest.mark.realprocess,
    pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace (.ci/run installs it)"),
]
# One of each shape: a tool call, a parallel group with nested calls, several
# turns, a mixed group, the SQLite backend.
SCENARIOS = [
    ROOT / "scenarios" / "payment.toml",
    ROOT / "scenarios" / "nested-parallel.toml",
    ROOT / "scenarios" / "multi-turn.toml",
    ROOT / "scenarios" / "mixed-parallel.toml",
    ROOT / "tests" / "scenarios" / "tiny-sqlite.toml",
]


def _traced(path: Path, workdir: Path, spawn: str) -> Reference:
    options = LabOptions(lab.make_target(), workdir, spawn=spawn, ground_truth="syscalls")
    reference = run_reference(str(path), load_scenario(str(path)), options)
    assert reference.returncode == 0, reference.stderr
    assert reference.ground_truth == "syscalls", reference.ground_truth_note
    return reference


def _comparable(fact: dict[str, Any]) -> dict[str, Any]:
    """A fact without what differs between two runs: its volatile fields,
    the run's directory and the pids in temp file names (an exec'd runtime
    runs in a PID namespace of its own)."""
    kept = normalized(fact)
    for key in ("file", "target", "to", "from"):
        if isinstance(fact.get(key), str):
            kept[key] = re.sub(r"\d+", "N", fact[key].rpartition("/session/")[2])
    return kept


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.name)
def test_a_forked_traced_run_shows_the_file_facts_of_an_exec_traced_one(
    path: Path, tmp_path: Path
) -> None:
    forked = _traced(path, tmp_path / "fork", "fork")
    execd = _traced(path, tmp_path / "exec", "exec")
    assert forked.syscalls and forked.trace_unsupported == execd.trace_unsupported == ()
    assert [_comparable(f) for f in forked.syscalls] == [_comparable(f) for f in execd.syscalls]
    assert drift(forked.trace, execd) is None
    # Forked, not the exec'd fallback: strace attached, no interpreter start.
    text = (tmp_path / "fork" / "reference" / path.name / "strace.txt").read_text()
    assert "execve(" not in text
    assert not reference_module._attach_refused


@pytest.mark.parametrize("pidns", ["1", "0"], ids=["namespaced", "flat"])
def test_strace_attaches_to_a_contained_child_before_its_first_call(
    pidns: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The child is the init of a PID namespace of its own (where allowed),
    # or a subreaper's child (FAULTLAB_PIDNS=0, another server): strace
    # attaches from the lab's namespace either way, and the first calls of
    # the run (its session's open, the writer lock) are in the trace.
    monkeypatch.setenv("FAULTLAB_PIDNS", pidns)
    path = str(ROOT / "scenarios" / "payment.toml")
    options = LabOptions(lab.make_target(), tmp_path, spawn="fork")
    child = make_child(options, path, tmp_path / "run" / "session", "run", "run")
    child.traced = True
    child.start()
    assert child.process is not None
    status = Path(f"/proc/{child.process.pid}/status").read_text()
    nspid = next(line for line in status.splitlines() if line.startswith("NSpid:")).split()[1:]
    if pidns == "1" and _pid_namespaces_allowed():
        assert nspid[-1] == "1" and len(nspid) == 2, nspid  # its namespace's init
    else:
        assert len(nspid) == 1, nspid
    tracer = attach(child.process.pid, tmp_path / "strace.txt", shutil.which("strace") or "")
    assert isinstance(tracer, Tracer), tracer
    assert run_to_exit(child, 60.0).returncode == 0
    assert tracer.finish(60.0) == ""
    parsed = parse_strace((tmp_path / "strace.txt").read_text(), tmp_path / "run" / "session",
                          child.report_inode)  # fmt: skip
    assert parsed.facts and parsed.facts[0]["after"] == 0, parsed.facts[:1]
    assert [r for r in parsed.reports if RELEASED not in r] == child.trace


def _pid_namespaces_allowed() -> bool:
    allowed = subprocess.run(["unshare", "--pid", "--fork", "true"], capture_output=True)
    return allowed.returncode == 0


def test_where_strace_cannot_attach_the_exec_traced_run_is_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A "strace" that refuses to attach, as under ptrace restrictions.
    refusing = tmp_path / "strace"
    refusing.write_text("#!/bin/sh\necho 'attach: ptrace(PTRACE_SEIZE, 1): Operation not "
                        "permitted' >&2\nexit 1\n")  # fmt: skip
    refusing.chmod(0o755)
    real_attach = attach
    monkeypatch.setattr(reference_module, "attach",
                        lambda pid, output, _strace: real_attach(pid, output, str(refusing)))
    monkeypatch.setattr(reference_module, "_attach_refused", [])
    path = ROOT / "scenarios" / "payment.toml"
    reference = _traced(path, tmp_path / "work", "fork")
    assert reference.syscalls
    assert reference_module._attach_refused == [
        "strace could not attach: attach: ptrace(PTRACE_SEIZE, 1): Operation not permitted"
    ]
    # The exec'd trace: strace started the interpreter.
    text = (tmp_path / "work" / "reference" / path.name / "strace.txt").read_text()
    assert "execve(" in text


def test_a_child_that_never_waits_is_not_waited_for_forever(tmp_path: Path) -> None:
    # A process that exits without waiting for its tracer: attach says so at once.
    done = subprocess.Popen([sys.executable, "-c", "pass"])
    done.wait()
    why = attach(done.pid, tmp_path / "strace.txt", shutil.which("strace") or "strace",
                 within=5.0)  # fmt: skip
    assert why == "the traced child exited before it waited for its tracer"
