# The crash lab as a library: what the CLI, the pytest plugin and users call.
# Each function validates its arguments (a `LabUsageError` names what is wrong)
# and returns values; nothing here prints or exits.  The lab never imports
# `faultlab.runtime`: it reaches a target only through the probe protocol, the
# log format and the scenario.  Its rooms, from the bottom up:
#   read/       the lab's own readers of persisted sessions (JSONL, SQLite)
#   process/    child processes, the fork-server client, targets, the reference run
#   oracle/     what must hold: expected repair, history validity, checks, codes
#   faults/     how a target is hurt: SIGKILL, live faults, power loss, corruption
#   acp/        driving an ACP agent the way an editor does
#   campaigns/  many cases: explore, fuzz, selftest, dry runs, the pytest glue
#   report/     reports, merge, inspect
# Every name is imported when first used (`__getattr__` below).
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from faultlab.lab.campaigns.api import (
        DRIVES,
        SUPPORTED_FAULTS,
        bundled_scenarios,
        check_drive,
        explore_agent,
        explore_paths,
        explore_scenarios,
        fuzz_agent,
        load_scenarios,
        make_target,
        parse_faults,
        reference_run,
        run_agent_case,
        run_single,
        workdir,
    )
    from faultlab.lab.campaigns.appexplore import run_app_single
    from faultlab.lab.campaigns.explore import (
        COVERAGE,
        ExploreResult,
        FaultTally,
        Interrupted,
        Shard,
        fault_tally,
        parse_shard,
    )
    from faultlab.lab.campaigns.fuzz import (
        FuzzInterrupted,
        FuzzResult,
        FuzzSettings,
        fuzz_campaign,
    )
    from faultlab.lab.campaigns.pytest_glue import (
        CrashLab,
        PluginOptions,
        ScenarioProblem,
        ScenarioRun,
        failure_text,
        plan_scenario,
        plugin_options,
    )
    from faultlab.lab.campaigns.selftest import (
        SelftestInterrupted,
        SelftestResult,
        SelftestRow,
        run_selftest,
    )
    from faultlab.lab.campaigns.zoo import Zoo, ZooVariant, default_zoo_path, load_zoo
    from faultlab.lab.errors import LabUsageError
    from faultlab.lab.oracle import (
        GUARANTEES,
        Case,
        CaseResult,
        Verdict,
        Violation,
        check_coverage,
        explain,
    )
    from faultlab.lab.process import LabOptions, Reference
    from faultlab.lab.read import LogEvent, LogView, find_log, read_any
    from faultlab.lab.report import (
        Inspection,
        MergeResult,
        RunInfo,
        check_report_dir,
        find_case,
        format_table,
        ground_truth_line,
        inspect_log,
        merge_reports,
        new_run_id,
        recorded_ids,
        write_report,
        write_selftest_report,
    )
    from faultlab.lab.report.fuzz import write_fuzz_report

__all__ = [
    "COVERAGE",
    "DRIVES",
    "GUARANTEES",
    "SUPPORTED_FAULTS",
    "Case",
    "CaseResult",
    "CrashLab",
    "ExploreResult",
    "FaultTally",
    "FuzzInterrupted",
    "FuzzResult",
    "FuzzSettings",
    "Inspection",
    "Interrupted",
    "LabOptions",
    "LabUsageError",
    "LogEvent",
    "LogView",
    "MergeResult",
    "PluginOptions",
    "Reference",
    "RunInfo",
    "ScenarioProblem",
    "ScenarioRun",
    "SelftestInterrupted",
    "SelftestResult",
    "SelftestRow",
    "Shard",
    "Verdict",
    "Violation",
    "Zoo",
    "ZooVariant",
    "bundled_scenarios",
    "check_coverage",
    "check_drive",
    "check_report_dir",
    "default_zoo_path",
    "explain",
    "explore_agent",
    "explore_paths",
    "explore_scenarios",
    "failure_text",
    "fault_tally",
    "find_case",
    "find_log",
    "format_table",
    "fuzz_agent",
    "fuzz_campaign",
    "ground_truth_line",
    "inspect_log",
    "load_scenarios",
    "load_zoo",
    "make_target",
    "merge_reports",
    "new_run_id",
    "parse_faults",
    "parse_shard",
    "plan_scenario",
    "plugin_options",
    "read_any",
    "recorded_ids",
    "reference_run",
    "run_agent_case",
    "run_app_single",
    "run_selftest",
    "run_single",
    "workdir",
    "write_fuzz_report",
    "write_report",
    "write_selftest_report",
]

# name -> the module that defines it, imported on first use: a process that
# needs one room (the MCP tool server, a fork-server child) pays for that room
# only, and the fuzzer (Hypothesis) only when fuzzing.
_ON_USE = {
    "COVERAGE": "faultlab.lab.campaigns.explore",
    "Case": "faultlab.lab.oracle",
    "CaseResult": "faultlab.lab.oracle",
    "CrashLab": "faultlab.lab.campaigns.pytest_glue",
    "DRIVES": "faultlab.lab.campaigns.api",
    "ExploreResult": "faultlab.lab.campaigns.explore",
    "FaultTally": "faultlab.lab.campaigns.explore",
    "GUARANTEES": "faultlab.lab.oracle",
    "Inspection": "faultlab.lab.report",
    "LabOptions": "faultlab.lab.process",
    "LabUsageError": "faultlab.lab.errors",
    "LogEvent": "faultlab.lab.read",
    "LogView": "faultlab.lab.read",
    "MergeResult": "faultlab.lab.report",
    "PluginOptions": "faultlab.lab.campaigns.pytest_glue",
    "Reference": "faultlab.lab.process",
    "RunInfo": "faultlab.lab.report",
    "SUPPORTED_FAULTS": "faultlab.lab.campaigns.api",
    "ScenarioProblem": "faultlab.lab.campaigns.pytest_glue",
    "ScenarioRun": "faultlab.lab.campaigns.pytest_glue",
    "SelftestResult": "faultlab.lab.campaigns.selftest",
    "SelftestInterrupted": "faultlab.lab.campaigns.selftest",
    "SelftestRow": "faultlab.lab.campaigns.selftest",
    "Shard": "faultlab.lab.campaigns.explore",
    "Verdict": "faultlab.lab.oracle",
    "Violation": "faultlab.lab.oracle",
    "Zoo": "faultlab.lab.campaigns.zoo",
    "ZooVariant": "faultlab.lab.campaigns.zoo",
    "bundled_scenarios": "faultlab.lab.campaigns.api",
    "check_coverage": "faultlab.lab.oracle",
    "check_drive": "faultlab.lab.campaigns.api",
    "check_report_dir": "faultlab.lab.report",
    "Interrupted": "faultlab.lab.campaigns.explore",
    "default_zoo_path": "faultlab.lab.campaigns.zoo",
    "explain": "faultlab.lab.oracle",
    "explore_agent": "faultlab.lab.campaigns.api",
    "explore_paths": "faultlab.lab.campaigns.api",
    "explore_scenarios": "faultlab.lab.campaigns.api",
    "fuzz_agent": "faultlab.lab.campaigns.api",
    "failure_text": "faultlab.lab.campaigns.pytest_glue",
    "fault_tally": "faultlab.lab.campaigns.explore",
    "find_case": "faultlab.lab.report",
    "find_log": "faultlab.lab.read",
    "format_table": "faultlab.lab.report",
    "ground_truth_line": "faultlab.lab.report",
    "inspect_log": "faultlab.lab.report",
    "load_scenarios": "faultlab.lab.campaigns.api",
    "load_zoo": "faultlab.lab.campaigns.zoo",
    "make_target": "faultlab.lab.campaigns.api",
    "merge_reports": "faultlab.lab.report",
    "new_run_id": "faultlab.lab.report",
    "parse_faults": "faultlab.lab.campaigns.api",
    "parse_shard": "faultlab.lab.campaigns.explore",
    "plan_scenario": "faultlab.lab.campaigns.pytest_glue",
    "plugin_options": "faultlab.lab.campaigns.pytest_glue",
    "read_any": "faultlab.lab.read",
    "recorded_ids": "faultlab.lab.report",
    "reference_run": "faultlab.lab.campaigns.api",
    "run_selftest": "faultlab.lab.campaigns.selftest",
    "run_agent_case": "faultlab.lab.campaigns.api",
    "run_app_single": "faultlab.lab.campaigns.appexplore",
    "run_single": "faultlab.lab.campaigns.api",
    "workdir": "faultlab.lab.campaigns.api",
    "write_report": "faultlab.lab.report",
    "write_selftest_report": "faultlab.lab.report",
    "FuzzResult": "faultlab.lab.campaigns.fuzz",
    "FuzzInterrupted": "faultlab.lab.campaigns.fuzz",
    "FuzzSettings": "faultlab.lab.campaigns.fuzz",
    "fuzz_campaign": "faultlab.lab.campaigns.fuzz",
    "write_fuzz_report": "faultlab.lab.report.fuzz",
}


def __getattr__(name: str) -> Any:
    module = _ON_USE.get(name)
    if module is None:
        raise AttributeError(f"module 'faultlab.lab' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
