# What the newest report says, for the commands that start from it: `--lf`
# (`explore --last-failed`) reruns the failing cases of the newest
# exploration, on the scenarios they came from.
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from faultlab.lab.report.shards import ReportMissing, read_shard

__all__ = ["LastFailed", "last_failed"]

# A case failed when its verdict is one of these (CaseResult.failed).
_FAILED = frozenset({"fail", "drift", "hung", "error"})


@dataclass(frozen=True, slots=True)
class LastFailed:
    """The failing case ids of a report and the scenario files they ran."""

    run: Path
    ids: tuple[str, ...]
    scenarios: tuple[str, ...]


def last_failed(report_dir: Path) -> LastFailed | None:
    """The failures of the run in `report_dir` (a run's directory, or a
    reports directory: its `latest`); None when there is no readable report."""
    run = report_dir if (report_dir / "cases.jsonl").is_file() else report_dir / "latest"
    try:  # read as untrusted input (shards.py): a broken report is a LabUsageError
        files = read_shard(run)
    except ReportMissing:
        return None
    failing = [r for r in files.records if r["verdict"] in _FAILED]
    scenarios = sorted({str(r["scenario"]) for r in failing})
    return LastFailed(files.path, tuple(str(r["id"]) for r in failing), tuple(scenarios))
