"""kill_points and cases do a real fault-free dry run of the scenario: every
kill point they draw is an occurrence the target reaches, and every case's
fault applies where it is drawn."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import InvalidArgument

from faultlab import strategies as fs
from faultlab.lab.campaigns.api import reference_run
from faultlab.lab.campaigns.explore import COVERAGE, plan_cases
from faultlab.scenario import load_scenario, parse_scenario

HERE = Path(__file__).resolve().parents[1]
TINY_TOOL = HERE / "scenarios" / "tiny-tool.toml"
pytestmark = pytest.mark.realprocess
FEW = settings(max_examples=15, deadline=None, database=None,
               suppress_health_check=list(HealthCheck))  # fmt: skip


def test_kill_points_are_the_occurrences_the_dry_run_reaches(tmp_path: Path) -> None:
    reached = set(reference_run(str(TINY_TOOL), workdir=tmp_path).occurrences)
    drawn: set[str] = set()

    @FEW
    @given(fs.kill_points(load_scenario(TINY_TOOL)))
    def collect(point: str) -> None:
        drawn.add(point)

    collect()
    assert drawn and drawn <= reached
    assert "tool/effect#1" in reached


def test_kill_points_refuses_a_scenario_whose_dry_run_fails() -> None:
    # A target that exits at once: no boundary is reachable.
    scenario = load_scenario(TINY_TOOL)
    with pytest.raises(InvalidArgument, match="the dry run of tiny-tool exited with status 3"):
        fs.kill_points(scenario, target="python3 -c 'raise SystemExit(3)'")


def test_generated_cases_apply_where_they_are_drawn() -> None:
    seen: list[str] = []

    @FEW
    @given(fs.cases(faults=("sigkill", "io-error")))
    def check(generated: fs.GeneratedCase) -> None:
        assert generated.occurrence != COVERAGE, generated.reference.stderr
        written = parse_scenario(Path(generated.path).read_text("utf-8"), path=generated.path)
        assert written.turns == generated.scenario.turns
        assert generated.case in plan_cases(generated.reference, (generated.fault,))
        seen.append(generated.fault)

    check()
    assert seen
