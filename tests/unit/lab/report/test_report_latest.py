# Each kind of report keeps its own newest link: an exploration `latest`, a
# fuzz campaign `latest-fuzz` (faultlab.lab.report.write.building_report), so
# a fuzz run never moves `latest` away from the newest exploration.
from __future__ import annotations

from pathlib import Path

from faultlab.lab.report.write import RunInfo, building_report


def info(run_id: str) -> RunInfo:
    return RunInfo(run_id, ("faultlab",), None, None, 60.0)


def test_fuzz_reports_leave_latest_to_the_explorations(tmp_path: Path) -> None:
    with building_report(tmp_path, info("run-a")) as (building, _final):
        (building / "cases.jsonl").write_text("")
    with building_report(tmp_path, info("run-b"), latest="latest-fuzz") as (building, _final):
        (building / "cases.jsonl").write_text("")
    assert (tmp_path / "latest").resolve() == (tmp_path / "run-a").resolve()
    assert (tmp_path / "latest-fuzz").resolve() == (tmp_path / "run-b").resolve()
