# `python -m faultlab.runtime` by hand: every bundled scenario runs to
# completion; user mistakes give one clear line and the documented exit code.
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from faultlab.runtime.backends.jsonl_format import read_log

REPO = Path(__file__).resolve().parents[2]
BUNDLED = sorted((REPO / "scenarios").glob("*.toml"))
pytestmark = pytest.mark.realprocess


def runtime(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "faultlab.runtime", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        stdin=subprocess.DEVNULL,
    )


def test_there_are_at_least_ten_bundled_scenarios() -> None:
    assert len(BUNDLED) >= 10


@pytest.mark.parametrize("scenario", BUNDLED, ids=lambda p: p.stem)
def test_bundled_scenario_runs_to_completion(tmp_path: Path, scenario: Path) -> None:
    done = runtime(str(scenario), "--session-dir", str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "done:" in done.stderr and "Traceback" not in done.stderr
    events = read_log((tmp_path / "session.jsonl").read_bytes(), "s").events
    ends = [e for e in events if e.type == "turn/end"]
    assert ends and all(e.data["reason"]["kind"] == "completed" for e in ends)


def test_a_malformed_scenario_exits_2_with_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\n[[turns]]\nuser = "hi"\n[[turns.steps]]\ntext = 3\n')
    done = runtime(str(bad), "--session-dir", str(tmp_path / "s"))
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0
    assert f"{bad}:5: turns[0].steps[0].text" in done.stderr


def test_an_existing_session_without_resume_exits_2(tmp_path: Path) -> None:
    scenario = str(REPO / "scenarios" / "chat.toml")
    assert runtime(scenario, "--session-dir", str(tmp_path)).returncode == 0
    again = runtime(scenario, "--session-dir", str(tmp_path))
    assert again.returncode == 2 and "already exists" in again.stderr


def test_a_corrupt_log_exits_4_naming_line_and_offset(tmp_path: Path) -> None:
    scenario = str(REPO / "scenarios" / "multi-turn.toml")
    assert runtime(scenario, "--session-dir", str(tmp_path)).returncode == 0
    log = tmp_path / "session.jsonl"
    lines = log.read_bytes().split(b"\n")
    offset = sum(len(line) + 1 for line in lines[:3])
    lines[3] = b"{garbage"
    log.write_bytes(b"\n".join(lines))
    done = runtime(scenario, "--session-dir", str(tmp_path), "--resume")
    assert done.returncode == 4
    assert f"session.jsonl:4: corrupt session log at byte {offset}" in done.stderr
    assert "Traceback" not in done.stderr


def test_resume_of_a_finished_session_does_nothing(tmp_path: Path) -> None:
    scenario = str(REPO / "scenarios" / "chat.toml")
    assert runtime(scenario, "--session-dir", str(tmp_path)).returncode == 0
    before = (tmp_path / "session.jsonl").read_bytes()
    again = runtime(scenario, "--session-dir", str(tmp_path), "--resume")
    assert again.returncode == 0 and "done: 0 turn(s)" in again.stderr
    assert (tmp_path / "session.jsonl").read_bytes() == before
