# What a protocol target writes is read bounded and without blocking (issue
# 31, item 3), through the real CLI with targets/badfiles.py: a session log
# that is a FIFO, a world ledger that links to /dev/zero, a log that is a
# 3 GiB (sparse) file are an `error` case naming the file and the code
# (TARGET_FILE_REFUSED, TARGET_OUTPUT_TOO_LARGE), in the fault-free run (every
# case of the scenario) or in one case's recovery; never a hang, never a
# read of the whole; and a target that reports more boundaries than a
# scenario may plan cases for is refused in one line before a case runs
# (`--max-cases`).  Each: its exit code, nothing left running, the scratch
# space emptied, memory and file size bounded (the corpus's RLIMIT_AS and
# RLIMIT_FSIZE).
from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.realprocess

TINY = str(REPO / "tests" / "scenarios" / "tiny.toml")
TARGET = str(Path(__file__).resolve().parent / "targets" / "badfiles.py")
FACTS = {"FAULTLAB_GROUND_TRUTH": "facts"}  # no strace: the plain exec path, faster


def _target(*args: str) -> str:
    return shlex.join([sys.executable, TARGET, *args])


def _explore(faultlab_cli: Callable[..., Any], tmp_path: Path, target: str,
             *extra: str) -> Any:  # fmt: skip
    scratch = tmp_path / "scratch"
    scratch.mkdir(exist_ok=True)
    done = faultlab_cli("explore", TINY, "--faults", "sigkill", "--no-report", "--json",
                        "--timeout", "30", "--target", target, *extra,
                        env={"FAULTLAB_SCRATCH": str(scratch), **FACTS})  # fmt: skip
    assert done.left == (), done.left
    assert list(scratch.iterdir()) == [], list(scratch.iterdir())
    assert "Traceback" not in done.stderr
    return done


def _codes(done: Any) -> dict[str, set[str]]:
    """verdict -> codes of the JSON summary's cases."""
    found: dict[str, set[str]] = {}
    for case in json.loads(done.stdout)["cases"]:
        found.setdefault(case["verdict"], set()).update(case["codes"])
    return found


@pytest.mark.parametrize(("mode", "code", "said"), [
    ("log-fifo", "TARGET_FILE_REFUSED", "session.jsonl"),
    ("ledger-zero", "TARGET_FILE_REFUSED", "world-ledger.jsonl"),
    ("ledger-link", "TARGET_FILE_REFUSED", "world-ledger.jsonl"),
    ("log-big", "TARGET_OUTPUT_TOO_LARGE", "session.jsonl"),
])  # fmt: skip
def test_a_refused_file_of_the_fault_free_run_is_an_error_for_its_scenario(
    faultlab_cli: Callable[..., Any], tmp_path: Path, mode: str, code: str, said: str
) -> None:
    big = tmp_path / "big"
    with open(big, "wb") as file:  # on the scratch's file system: a hard link works
        os.truncate(file.fileno(), 3 << 30)
    (tmp_path / "secret").write_text("not the target's")
    extra = {"log-big": (str(big),), "ledger-link": (str(tmp_path / "secret"),)}.get(mode, ())
    done = _explore(faultlab_cli, tmp_path, _target(mode, *extra))
    assert done.code == 1, done.stderr[-3000:]
    assert _codes(done) == {"error": {code}}
    assert said in done.stderr and code in done.stderr


def test_a_refused_file_of_one_cases_recovery_is_that_cases_error(
    faultlab_cli: Callable[..., Any], tmp_path: Path
) -> None:
    # The fault-free run is clean; the last child of each case leaves its
    # ledger a link to /dev/zero: each case is an error, the coverage passes.
    done = _explore(faultlab_cli, tmp_path, _target("resume-ledger-zero"), "--shard", "1/4")
    assert done.code == 1, done.stderr[-3000:]
    assert _codes(done) == {"pass": set(), "error": {"TARGET_FILE_REFUSED"}}


def test_too_many_planned_cases_are_refused_in_one_line(
    faultlab_cli: Callable[..., Any], tmp_path: Path
) -> None:
    done = _explore(faultlab_cli, tmp_path, _target("boundaries", "300"), "--max-cases", "100")
    assert done.code == 2, done.stderr[-3000:]
    line = [x for x in done.stderr.splitlines() if x.startswith("faultlab: error:")]
    assert len(line) == 1 and "300 crash cases planned" in line[0], done.stderr
    assert "--max-cases" in line[0] and done.stdout == ""
