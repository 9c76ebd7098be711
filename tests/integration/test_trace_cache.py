# The cache of traced reference runs across runs (issue 34, item 1;
# faultlab/lab/process/tracecache.py, its key tracekey.py): a second run of
# the same target code on the same scenario is served from the cache with no
# strace child (strace writes the run's strace.txt: a served run has none),
# and the cases judged on it get the verdicts a fresh trace gives; a changed
# target misses; a corrupt, hostile or linked entry, or a folder others may
# write, is never trusted: the run is traced anew and the entry rewritten.
# Real processes, real strace, real files.
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from faultlab import lab
from faultlab.lab.drives.classic import run_one
from faultlab.lab.faults.fault import Planning
from faultlab.lab.faults.table import CLASSIC_FAULTS
from faultlab.lab.process.reference import LabOptions, Reference, run_reference
from faultlab.lab.process.target import Target
from faultlab.lab.process.tracecache import ENV_TRACE_CACHE
from faultlab.lab.process.tracekey import trace_key
from faultlab.scenario import load_scenario

ROOT = Path(__file__).resolve().parents[2]
PAYMENT = ROOT / "scenarios" / "payment.toml"
pytestmark = [
    pytest.mark.realprocess,
    pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace (.ci/run installs it)"),
]


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv(ENV_TRACE_CACHE, str(folder))
    return folder


def _reference(workdir: Path, target: Target | None = None, policy: str | None = None,
               scenario: Path = PAYMENT) -> Reference:  # fmt: skip
    made = target or lab.make_target(policy=policy)
    options = LabOptions(made, workdir, ground_truth="syscalls")
    reference = run_reference(str(scenario), load_scenario(str(scenario)), options)
    assert reference.returncode == 0, reference.stderr
    assert reference.ground_truth == "syscalls", reference.ground_truth_note
    return reference


def _traced_here(workdir: Path, scenario: Path = PAYMENT) -> bool:
    """Whether strace ran for this reference run (it writes strace.txt)."""
    return (workdir / "reference" / scenario.name / "strace.txt").exists()


def _entries(cache: Path) -> list[Path]:
    return sorted(cache.glob("*.json"))


def _moved(value: object, old: Path, new: Path) -> object:
    """`value` with the reference folder of `old`'s run named as `new`'s."""
    text = orjson.dumps(value).decode().replace(str(old / "reference"), str(new / "reference"))
    return orjson.loads(text)


def test_a_second_run_is_served_from_the_cache_and_judged_alike(
    tmp_path: Path, cache: Path
) -> None:
    first = _reference(tmp_path / "a", policy="turn-only")
    assert _traced_here(tmp_path / "a") and not first.trace_cached
    assert len(_entries(cache)) == 1
    second = _reference(tmp_path / "b", policy="turn-only")
    assert second.trace_cached and not _traced_here(tmp_path / "b")  # no strace child
    assert list(second.syscalls) == _moved(list(first.syscalls), tmp_path / "a", tmp_path / "b")
    assert list(second.trace) == _moved(list(first.trace), tmp_path / "a", tmp_path / "b")
    assert (second.log_bytes, second.written, second.ledger) == (
        first.log_bytes, first.written, first.ledger)  # fmt: skip
    # Power loss is judged on the trace: the served one gives the verdicts a
    # fresh one gives, failures included (turn-only loses what it never fsynced).
    verdicts = {}
    for name, reference in (("a", first), ("b", second)):
        options = LabOptions(lab.make_target(policy="turn-only"), tmp_path / name,
                             ground_truth="syscalls")  # fmt: skip
        cases = CLASSIC_FAULTS["power-loss"].plan(reference, Planning(options))
        assert cases
        verdicts[name] = [
            (c.occurrence, r.verdict, r.codes)
            for c, r in ((c, run_one(c, reference, options)) for c in cases)
        ]
    assert verdicts["a"] == verdicts["b"]
    assert any(verdict == "fail" for _, verdict, _ in verdicts["b"])


def test_a_changed_target_misses_the_cache(tmp_path: Path, cache: Path) -> None:
    script = tmp_path / "target" / "runtime_wrapper.py"
    script.parent.mkdir()
    script.write_text("import runpy\nrunpy.run_module('faultlab.runtime', run_name='__main__')\n")
    target = lab.make_target(target=[sys.executable, str(script)])
    _reference(tmp_path / "a", target)
    assert _traced_here(tmp_path / "a")
    assert _reference(tmp_path / "b", target).trace_cached and not _traced_here(tmp_path / "b")
    script.write_text(script.read_text() + "# changed\n")
    changed = _reference(tmp_path / "c", target)
    assert not changed.trace_cached and _traced_here(tmp_path / "c")
    (script.parent / "helper.py").write_text("X = 1\n")  # a source beside the script
    assert not _reference(tmp_path / "d", target).trace_cached
    assert len(_entries(cache)) == 3


def _hostile_entries(entry: Path) -> list[tuple[str, bytes]]:
    good = orjson.loads(entry.read_bytes())
    after = dict(good, syscalls=[dict(good["syscalls"][0], after=10**6)])
    written = dict(good, syscalls=[dict(good["syscalls"][0], w=len(good["written"]) + 5)])
    report = dict(good, trace=[{"boundary": "tool/effect", "n": 0}])
    size = dict(good, syscalls=[dict(good["syscalls"][0], size="big")])
    kind = dict(good, syscalls=[dict(good["syscalls"][0], fact="mmap")])
    other = dict(good, key="0" * 64)
    return [
        ("garbage", b"\x00\xffnot json"),
        ("truncated", entry.read_bytes()[:100]),
        ("fact after the end of the trace", orjson.dumps(after)),
        ("fact naming a write that does not exist", orjson.dumps(written)),
        ("report with a bad occurrence", orjson.dumps(report)),
        ("fact with a size that is not a number", orjson.dumps(size)),
        ("fact of a kind the parser never makes", orjson.dumps(kind)),
        ("another key's entry", orjson.dumps(other)),
    ]


def test_a_corrupt_or_hostile_entry_is_ignored_and_rewritten(tmp_path: Path, cache: Path) -> None:
    _reference(tmp_path / "first")
    (entry,) = _entries(cache)
    good = entry.read_bytes()
    for index, (what, data) in enumerate(_hostile_entries(entry)):
        entry.write_bytes(data)
        workdir = tmp_path / f"run{index}"
        reference = _reference(workdir)
        assert not reference.trace_cached and _traced_here(workdir), what
        assert orjson.loads(entry.read_bytes())["key"] == orjson.loads(good)["key"], what
    # The rewritten entry serves the next run.
    assert _reference(tmp_path / "again").trace_cached


def test_a_linked_entry_is_not_followed(tmp_path: Path, cache: Path) -> None:
    _reference(tmp_path / "first")
    (entry,) = _entries(cache)
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_bytes(entry.read_bytes())
    entry.unlink()
    entry.symlink_to(elsewhere)
    reference = _reference(tmp_path / "second")
    assert not reference.trace_cached and _traced_here(tmp_path / "second")
    assert not entry.is_symlink() and entry.is_file()  # the link replaced by a real entry
    linked = orjson.loads(elsewhere.read_bytes())
    assert linked["log"] != orjson.loads(entry.read_bytes())["log"]  # the new run's, not the link's


def test_a_folder_others_may_write_is_not_used(tmp_path: Path, cache: Path) -> None:
    _reference(tmp_path / "first")
    os.chmod(cache, 0o777)
    reference = _reference(tmp_path / "second")
    assert not reference.trace_cached and _traced_here(tmp_path / "second")


def test_the_cache_is_off_when_the_environment_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_TRACE_CACHE, "off")
    _reference(tmp_path / "a")
    assert not _reference(tmp_path / "b").trace_cached and _traced_here(tmp_path / "b")


def test_the_key_holds_the_scenario_backend_policy_and_command(tmp_path: Path) -> None:
    changed = tmp_path / "payment.toml"
    changed.write_bytes(PAYMENT.read_bytes() + b"\n# another scenario\n")

    def key(target: Target, scenario: Path = PAYMENT, backend: str = "jsonl") -> str | None:
        return trace_key(target, str(scenario), backend=backend, spawn="fork",
                         strace=shutil.which("strace") or "strace")  # fmt: skip

    base = key(lab.make_target())
    assert base == key(lab.make_target())
    others = [
        key(lab.make_target(), changed),
        key(lab.make_target(), backend="sqlite"),
        key(lab.make_target(policy="turn-only")),
        key(lab.make_target(target=[sys.executable, "-m", "faultlab.runtime", "--x"])),
    ]
    assert base not in others and len(set(others)) == len(others)
    assert key(lab.make_target(), tmp_path / "missing.toml") is None


def test_the_command_line_keeps_a_trace_unless_told_not_to(tmp_path: Path, cache: Path) -> None:
    command = [sys.executable, "-m", "faultlab", "explore", str(PAYMENT), "--faults",
               "power-loss", "-k", "written#1", "--no-report"]  # fmt: skip
    env = {**os.environ, ENV_TRACE_CACHE: str(cache), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([*command, "--no-trace-cache"], cwd=tmp_path, env=env,
                          capture_output=True, timeout=300, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    assert not _entries(cache)
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, timeout=300,
                          check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    assert len(_entries(cache)) == 1
    assert b"trace cache" not in done.stderr
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, timeout=300,
                          check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    assert b"(1 from the trace cache of an earlier run)" in done.stderr
