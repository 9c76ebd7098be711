# The lab itself interrupted, through the real CLI: SIGINT or SIGTERM during
# `explore --faults all --jobs 2` leaves a report marked incomplete with the
# cases it finished (exit 130, a pytest-like line), no hidden temporary
# report folder, an empty scratch location and no process; SIGTERM works even
# when the lab was started with SIGINT ignored (a background job of a
# non-interactive shell); a SIGKILLed lab's scratch directory is removed by
# the next run.
from __future__ import annotations

import json
import signal
from collections.abc import Callable
from pathlib import Path

import pytest

pytestmark = pytest.mark.realprocess

REPO = Path(__file__).resolve().parents[2]
# Two small bundled scenarios: 300-odd cases, the first tenth done in a few seconds.
SMALL = [str(REPO / "scenarios" / name) for name in ("payment.toml", "multi-turn.toml")]
TINY = str(REPO / "tests" / "scenarios" / "tiny.toml")
FACTS = {"FAULTLAB_GROUND_TRUTH": "facts"}


def _started(faultlab_started: Callable[..., object], tmp_path: Path, **options: object) -> object:
    (tmp_path / "scratch").mkdir()
    return faultlab_started(  # type: ignore[operator]
        "explore", *SMALL, "--faults", "all", "--jobs", "2", "--report-dir",
        str(tmp_path / "reports"),
        env={"FAULTLAB_SCRATCH": str(tmp_path / "scratch"), **FACTS}, **options,
    )  # fmt: skip


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_exploration_keeps_what_it_finished(
    faultlab_started: Callable[..., object], tmp_path: Path, signum: int
) -> None:
    # SIGTERM's lab starts with SIGINT ignored, as a non-interactive shell's
    # background job does: SIGTERM must stop it all the same.
    lab = _started(faultlab_started, tmp_path, ignore_sigint=signum == signal.SIGTERM)
    lab.wait_for("] 0 failing")  # type: ignore[attr-defined]  # some cases finished
    lab.process.send_signal(signum)  # type: ignore[attr-defined]
    done = lab.finish()  # type: ignore[attr-defined]
    assert done.code == 130, done.stderr
    assert "Traceback" not in done.stderr
    assert done.left == ()
    reports = tmp_path / "reports"
    summary = json.loads((reports / "latest" / "summary.json").read_text())
    assert summary["complete"] is False
    assert 0 < summary["cases"] < summary["planned"]
    cases = (reports / "latest" / "cases.jsonl").read_text().splitlines()
    assert len(cases) == summary["cases"]
    assert f"interrupted after {summary['cases']} of {summary['planned']} case(s), 0 failed" \
        in done.stderr
    assert "INCOMPLETE" in (reports / "latest" / "report.md").read_text()
    assert [p.name for p in reports.iterdir() if p.name.startswith(".")] == []
    assert list((tmp_path / "scratch").iterdir()) == []


def test_the_next_run_removes_a_killed_labs_scratch(
    faultlab_started: Callable[..., object], faultlab_cli: Callable[..., object],
    tmp_path: Path,
) -> None:  # fmt: skip
    lab = _started(faultlab_started, tmp_path)
    lab.wait_for("exploring")  # type: ignore[attr-defined]
    scratch = tmp_path / "scratch"
    lab.wait_for("] 0 failing")  # type: ignore[attr-defined]
    lab.process.send_signal(signal.SIGKILL)  # type: ignore[attr-defined]
    done = lab.finish()  # type: ignore[attr-defined]
    assert done.code == -signal.SIGKILL
    assert done.left == ()
    left = list(scratch.iterdir())
    assert len(left) == 1 and (left[0] / ".faultlab-owner").is_file()
    # Someone else's directory that names no owner is not ours to remove.
    (scratch / "faultlab-foreign").mkdir()
    again = faultlab_cli("boundaries", TINY, env={"FAULTLAB_SCRATCH": str(scratch), **FACTS})
    assert again.code == 0, again.stderr  # type: ignore[attr-defined]
    assert [p.name for p in scratch.iterdir()] == ["faultlab-foreign"]


def test_an_interrupted_quick_selftest_keeps_the_rows_it_finished(
    faultlab_started: Callable[..., object], tmp_path: Path
) -> None:
    # Four variants one at a time: interrupted after the first row is shown,
    # the report holds that row (and any finished since), marked incomplete.
    variants = "resume_skips_checkpoints,repair_ignores_nested,no_request_checkpoint," \
               "tool_checkpoint_after_body"  # fmt: skip
    (tmp_path / "scratch").mkdir()
    lab = faultlab_started(  # type: ignore[operator]
        "selftest", "--quick", "--variants", variants, "--jobs", "1",
        "--report-dir", str(tmp_path / "reports"),
        env={"FAULTLAB_SCRATCH": str(tmp_path / "scratch"), **FACTS},
    )  # fmt: skip
    lab.wait_for("detected")  # the first row
    lab.process.send_signal(signal.SIGINT)
    done = lab.finish()
    assert done.code == 130, done.stderr
    assert "Traceback" not in done.stderr and done.left == ()
    (report,) = [p for p in (tmp_path / "reports").iterdir() if p.is_dir() and not p.is_symlink()]
    result = json.loads((report / "selftest.json").read_text())
    assert result["complete"] is False
    assert 1 <= len(result["rows"]) < 5, result["rows"]
    assert list((tmp_path / "scratch").iterdir()) == []
