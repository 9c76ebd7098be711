# User mistakes with `faultlab fuzz`, `faultlab report merge` and targets:
# exit 2 and one line naming the problem, never a traceback.  (Fast: no
# child process is started.)
from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from faultlab.cli import main


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("fuzz", "--examples", "0"), "0 is out of range (from 1 to 1000000)"),
        (("fuzz", "--seed", "-1"), "--seed"),
        (("fuzz", "--faults", "sigkill,meteor"), "unknown fault 'meteor'"),
        (("fuzz", "--shard", "0/2"), "K must be between 1 and N"),
        (("fuzz", "--jobs", "0"), "--jobs"),
        (("fuzz", "--stream-size", "0"), "--stream-size"),
        (("fuzz", "--target", "no-such-program-xyz"), "'no-such-program-xyz' is not an executable"),
        (("explore", "--target", "no-such-program-xyz"), "is not an executable"),
        (("report", "merge"), "Missing argument"),
        (("report", "merge", "/nonexistent/run"), "/nonexistent/run: no such report directory"),
    ],
)
def test_usage_errors_exit_2_with_one_line(args: tuple[str, ...], needle: str) -> None:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 2, result.stderr
    assert needle in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_merging_something_that_is_not_a_report(tmp_path: Path) -> None:
    (tmp_path / "summary.json").write_text("{not json")
    (tmp_path / "run.json").write_text("{}")
    (tmp_path / "cases.jsonl").write_text("")
    result = CliRunner().invoke(main, ["report", "merge", str(tmp_path)])
    assert result.exit_code == 2 and "summary.json: not JSON" in result.stderr
