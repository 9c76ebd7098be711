# What is shown and kept: a run's report (summary, cases, JUnit, Markdown,
# failure artifacts), the merge of shards, the selftest's report, `inspect`.
from __future__ import annotations

from faultlab.lab.report.inspect import (
    Inspection,
    inspect_log,
)
from faultlab.lab.report.merge import (
    MergeResult,
    merge_reports,
)
from faultlab.lab.report.selftest import (
    format_table,
    write_selftest_report,
)
from faultlab.lab.report.write import (
    RunInfo,
    building_report,
    check_report_dir,
    dumps_json,
    find_case,
    ground_truth_line,
    ground_truths,
    junit_xml,
    markdown_report,
    new_run_id,
    recorded_ids,
    replay_command,
    unsupported_faults,
    write_report,
)

# Imported on use, not here: `fuzz` (the fuzz campaign's report; it pulls in
# Hypothesis).

__all__ = [
    "Inspection",
    "MergeResult",
    "RunInfo",
    "building_report",
    "check_report_dir",
    "dumps_json",
    "find_case",
    "format_table",
    "ground_truth_line",
    "ground_truths",
    "inspect_log",
    "junit_xml",
    "markdown_report",
    "merge_reports",
    "new_run_id",
    "recorded_ids",
    "replay_command",
    "unsupported_faults",
    "write_report",
    "write_selftest_report",
]
