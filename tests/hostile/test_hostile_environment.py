# The user's environment, and what a killed run leaves (issue 31, items 4
# and 5), through the real CLI: TMPDIR missing or a file, a scenario path or
# a scenario folder's entry that is not UTF-8, a deleted working directory,
# an unwritable HOME each get exit 2 with one line, or work; report.html's
# script survives a malformed fragment (`#%E0`); `faultlab-gate-*` socket
# folders of a SIGKILLed `explore --agent` and the `.partial` folder of a
# SIGKILLed `agents install` are removed by the next run (their owner is
# gone), and a failed install leaves none.  Nothing left running.
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.realprocess

TINY = REPO / "tests" / "scenarios" / "tiny.toml"
FACTS = {"FAULTLAB_GROUND_TRUTH": "facts"}


@pytest.mark.parametrize("kind", ["missing", "a-file"])
def test_a_bad_tmpdir_is_one_line(
    faultlab_cli: Callable[..., Any], tmp_path: Path, kind: str
) -> None:
    tmpdir = tmp_path / "nowhere"
    if kind == "a-file":
        tmpdir.write_text("x")
    env = {"TMPDIR": str(tmpdir), "FAULTLAB_SCRATCH": ""}
    done = faultlab_cli("boundaries", str(TINY), env=env)
    assert done.code == 2, done.stderr
    line = done.one_line_error()
    assert f"TMPDIR={tmpdir}" in line and ("does not exist" if kind == "missing"
                                             else "not a directory") in line  # fmt: skip
    assert done.left == ()


def test_a_scenario_path_that_is_not_utf8_is_one_line(
    faultlab_cli: Callable[..., Any], tmp_path: Path
) -> None:
    name = os.fsdecode(b"sc\xff.toml")
    shutil.copy(TINY, tmp_path / name)
    done = faultlab_cli("explore", name, "--faults", "sigkill", "--no-report", env=FACTS)
    assert done.code == 2, done.stderr
    assert "not valid UTF-8" in done.one_line_error()
    folder = tmp_path / "folder"
    folder.mkdir()
    shutil.copy(TINY, folder / name)
    done = faultlab_cli("explore", "folder", "--faults", "sigkill", "--no-report", env=FACTS)
    assert done.code == 2, done.stderr
    assert "not valid UTF-8" in done.one_line_error() and done.left == ()


def test_a_deleted_working_directory_is_one_line(tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    shutil.copy(TINY, gone / "tiny.toml")
    script = f"cd {gone} && rm -r {gone} && exec {sys.executable} -m faultlab boundaries tiny.toml"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=120,
                          env=env, check=False)  # fmt: skip
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "working directory is gone" in lines[0], done.stderr


def test_an_unwritable_home_works_or_is_one_line(
    faultlab_cli: Callable[..., Any], tmp_path: Path
) -> None:
    env = {"HOME": "/dev/null", "FAULTLAB_AGENTS_DIR": "", **FACTS}
    done = faultlab_cli("explore", str(TINY), "--faults", "sigkill", "--shard", "1/6",
                        "--no-report", env=env)  # fmt: skip
    assert done.code == 0, done.stderr
    done = faultlab_cli("agents", "install", "codex", "--force", env=env)
    assert done.code == 2, done.stderr
    line = done.one_line_error()
    assert "cannot install into /dev/null/" in line and "FAULTLAB_AGENTS_DIR" in line


def test_report_html_survives_a_malformed_fragment(tmp_path: Path) -> None:
    # The page's script with a stand-in for the browser: a link ending `#%E0`
    # must not throw (decodeURIComponent does, on a lone %E0).
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed (apt-get install nodejs)")
    from faultlab.lab.report.html import _JS

    stub = """
var listeners = {}, attrs = {};
var el = {parentElement: null, open: false, scrollIntoView: function(){},
  addEventListener: function(){}};
globalThis.location = {hash: '#%E0'};
globalThis.window = {addEventListener: function(k, f){ listeners[k] = f; }};
globalThis.performance = {now: function(){ return 1; }};
globalThis.document = {getElementById: function(){ return el; },
  querySelectorAll: function(){ return []; },
  body: {setAttribute: function(k, v){ attrs[k] = v; }}};
"""
    script = tmp_path / "page.js"
    script.write_text(stub + _JS + "\nif (attrs['data-ready'] !== '1') process.exit(5);\n")
    done = subprocess.run([node, str(script)], capture_output=True, text=True, timeout=60,
                          check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr


def _gate_dirs(tmpdir: Path) -> list[Path]:
    return sorted(tmpdir.glob("faultlab-gate-*"))


def test_a_killed_agent_runs_socket_folders_are_removed_by_the_next_run(
    faultlab_started: Callable[..., Any], faultlab_cli: Callable[..., Any], tmp_path: Path
) -> None:
    tmpdir, scratch = tmp_path / "tmp", tmp_path / "scratch"
    tmpdir.mkdir()
    scratch.mkdir()
    env = {"TMPDIR": str(tmpdir), "FAULTLAB_SCRATCH": str(scratch), **FACTS}
    lab = faultlab_started("explore", str(TINY), "--agent", "reference", "--no-report", env=env)
    deadline = time.monotonic() + 240
    while not _gate_dirs(tmpdir) and lab.process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gate_dirs(tmpdir), lab.wait_for("", 1)
    lab.process.send_signal(signal.SIGKILL)
    done = lab.finish()
    assert done.code == -signal.SIGKILL
    assert done.left == ()
    left = _gate_dirs(tmpdir)
    assert left and all((d / ".faultlab-owner").is_file() for d in left)
    (tmpdir / "faultlab-gate-foreign").mkdir()  # names no owner: not ours to remove
    again = faultlab_cli("boundaries", str(TINY), env=env)
    assert again.code == 0, again.stderr
    assert [d.name for d in _gate_dirs(tmpdir)] == ["faultlab-gate-foreign"]
    assert list(scratch.iterdir()) == []


def _fake_npm(tmp_path: Path, body: str) -> dict[str, str]:
    """PATH with an `npm` that runs `body` (sh), and a private agents folder."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    npm = bin_dir / "npm"
    npm.write_text(f"#!/bin/sh\n{body}\n")
    npm.chmod(0o755)
    return {"PATH": f"{bin_dir}:{os.environ['PATH']}",
            "FAULTLAB_AGENTS_DIR": str(tmp_path / "agents")}  # fmt: skip


def test_a_failed_install_leaves_no_partial_folder(
    faultlab_cli: Callable[..., Any], tmp_path: Path
) -> None:
    env = _fake_npm(tmp_path, "echo 'npm ERR! offline' >&2; exit 1")
    done = faultlab_cli("agents", "install", "codex", env=env)
    assert done.code == 2, done.stderr
    assert "Traceback" not in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last == "faultlab: error: installing codex failed (exit 1): npm ERR! offline"
    assert list((tmp_path / "agents").iterdir()) == []


def test_a_killed_installs_partial_folder_is_removed_by_the_next_run(
    faultlab_started: Callable[..., Any], faultlab_cli: Callable[..., Any], tmp_path: Path
) -> None:
    env = _fake_npm(tmp_path, "sleep 120")
    partial = tmp_path / "agents" / "codex-0.171.0.partial"
    lab = faultlab_started("agents", "install", "codex", env=env)
    deadline = time.monotonic() + 60
    while not (partial / ".faultlab-owner").is_file() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert (partial / ".faultlab-owner").is_file()
    lab.process.send_signal(signal.SIGKILL)
    assert lab.finish().code == -signal.SIGKILL  # its fake npm is killed by the fixture
    assert partial.is_dir()
    listed = faultlab_cli("agents", "list", env=env)
    assert listed.code == 0, listed.stderr
    assert not partial.exists() and list((tmp_path / "agents").iterdir()) == []
