# The CI fan-out of examples/ci/ (issue 34): four shards of one campaign run
# as four separate processes by the very script the GitHub Actions and GitLab
# CI examples run on each runner (examples/ci/shard.sh), each with its own
# report directory, then `faultlab report merge` of the four uploaded
# directories: the merged report is the unsharded run case for case (ids in
# order, verdicts, codes), and the merge exits 1 like the unsharded run.
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

ROOT = Path(__file__).resolve().parents[2]
SHARD = ROOT / "examples" / "ci" / "shard.sh"
TINY_TOOL = str(ROOT / "tests" / "scenarios" / "tiny-tool.toml")
# turn-only fails some cases, so verdicts and codes differ between cases
CAMPAIGN = (TINY_TOOL, "--policy", "turn-only", "--faults", "sigkill")
pytestmark = pytest.mark.realprocess


def runner_env() -> dict[str, str]:
    """`faultlab` on PATH, as on a CI runner after `pip install faultlab`."""
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    return {**os.environ, "PATH": path}


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, env=runner_env(), text=True, capture_output=True,
                          timeout=300, check=False)  # fmt: skip


def cases(run_dir: Path) -> list[tuple[str, str, list[str]]]:
    records: list[dict[str, Any]] = [
        orjson.loads(line) for line in (run_dir / "cases.jsonl").read_bytes().splitlines()
    ]
    return [(r["id"], r["verdict"], r["codes"]) for r in records]


def test_four_shards_run_apart_and_merged_equal_the_unsharded_run(tmp_path: Path) -> None:
    whole = run([sys.executable, "-m", "faultlab", "explore", *CAMPAIGN,
                 "--report-dir", "whole"], tmp_path)  # fmt: skip
    assert whole.returncode == 1, whole.stderr
    shards = [subprocess.Popen(["sh", str(SHARD), str(k), "4", f"shard-{k}", *CAMPAIGN],
                               cwd=tmp_path, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True, env=runner_env())
              for k in (1, 2, 3, 4)]  # fmt: skip
    for shard in shards:
        _out, err = shard.communicate(timeout=300)
        assert shard.returncode == 0, err  # a shard with violations still ran: exit 0
    uploaded = [tmp_path / f"shard-{k}" for k in (1, 2, 3, 4)]
    assert all(d.is_dir() and not d.is_symlink() and (d / "summary.json").is_file()
               for d in uploaded)  # fmt: skip
    parts = [cases(d) for d in uploaded]
    assert all(parts)  # every shard ran some cases
    merged = run(["faultlab", "report", "merge", *map(str, reversed(uploaded)),
                  "--report-dir", "merged"], tmp_path)  # fmt: skip
    assert merged.returncode == 1, merged.stderr  # the campaign's violations gate CI
    expected = cases((tmp_path / "whole" / "latest").resolve())
    assert cases((tmp_path / "merged" / "latest").resolve()) == expected
    assert any(verdict != "pass" for _id, verdict, _codes in expected)
    assert sorted(c for part in parts for c in part) == sorted(expected)


def test_a_shard_that_cannot_run_fails_its_ci_job(tmp_path: Path) -> None:
    bad = run(["sh", str(SHARD), "1", "4", "out", TINY_TOOL, "--faults", "nope"], tmp_path)
    assert bad.returncode == 2 and "nope" in bad.stderr
    assert not (tmp_path / "out").exists()
    usage = run(["sh", str(SHARD), "1", "4"], tmp_path)
    assert usage.returncode == 2 and "usage:" in usage.stderr
