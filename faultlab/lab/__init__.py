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
    from faultlab.lab.agents import bundled_adapters, find_adapter, list_agents
    from faultlab.lab.agents import install as install_agent
    from faultlab.lab.agents.scaffold import adapter_template
    from faultlab.lab.blackbox.check import check_agent
    from faultlab.lab.blackbox.stability import repeated_outcomes
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
        make_drive,
        make_target,
        parse_faults,
        reference_run,
        replay_drive,
        run_agent_case,
        run_app_single,
        run_single,
        workdir,
    )
    from faultlab.lab.campaigns.appexplore import app_matrix, by_mode
    from faultlab.lab.campaigns.bisect import BisectResult, Lag, bisect_delays
    from faultlab.lab.campaigns.engine import explore, fuzz, run_case
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
    from faultlab.lab.campaigns.select import Selection
    from faultlab.lab.campaigns.selftest import (
        SelftestInterrupted,
        SelftestResult,
        SelftestRow,
        run_selftest,
    )
    from faultlab.lab.campaigns.zoo import Zoo, ZooVariant, default_zoo_path, load_zoo
    from faultlab.lab.drives import DRIVE_NAMES, Drive, drive_accepts
    from faultlab.lab.errors import (
        MAX_TIMEOUT,
        MIN_TIMEOUT,
        LabUsageError,
        check_jobs,
        check_timeout,
    )
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
        replay_command,
        write_report,
        write_selftest_report,
    )
    from faultlab.lab.report.agentinspect import inspect_agent_log
    from faultlab.lab.report.console import (
        Style,
        group_failures,
        progress_text,
        render_failures,
        render_selftest_problems,
        use_color,
    )
    from faultlab.lab.report.findings import findings_markdown, read_findings, write_findings
    from faultlab.lab.report.fuzz import write_fuzz_report
    from faultlab.lab.report.recent import last_failed

__all__ = [
    "COVERAGE",
    "DRIVES",
    "DRIVE_NAMES",
    "GUARANTEES",
    "MAX_TIMEOUT",
    "MIN_TIMEOUT",
    "SUPPORTED_FAULTS",
    "BisectResult",
    "Case",
    "CaseResult",
    "CrashLab",
    "Drive",
    "ExploreResult",
    "FaultTally",
    "FuzzInterrupted",
    "FuzzResult",
    "FuzzSettings",
    "Inspection",
    "Interrupted",
    "LabOptions",
    "LabUsageError",
    "Lag",
    "LogEvent",
    "LogView",
    "MergeResult",
    "PluginOptions",
    "Reference",
    "RunInfo",
    "ScenarioProblem",
    "ScenarioRun",
    "Selection",
    "SelftestInterrupted",
    "SelftestResult",
    "SelftestRow",
    "Shard",
    "Style",
    "Verdict",
    "Violation",
    "Zoo",
    "ZooVariant",
    "adapter_template",
    "app_matrix",
    "bisect_delays",
    "bundled_adapters",
    "bundled_scenarios",
    "by_mode",
    "check_agent",
    "check_coverage",
    "check_drive",
    "check_jobs",
    "check_report_dir",
    "check_timeout",
    "default_zoo_path",
    "drive_accepts",
    "explain",
    "explore",
    "explore_agent",
    "explore_paths",
    "explore_scenarios",
    "failure_text",
    "fault_tally",
    "find_adapter",
    "find_case",
    "find_log",
    "findings_markdown",
    "format_table",
    "fuzz",
    "fuzz_agent",
    "fuzz_campaign",
    "ground_truth_line",
    "group_failures",
    "inspect_agent_log",
    "inspect_log",
    "install_agent",
    "last_failed",
    "list_agents",
    "load_scenarios",
    "load_zoo",
    "make_drive",
    "make_target",
    "merge_reports",
    "new_run_id",
    "parse_faults",
    "parse_shard",
    "plan_scenario",
    "plugin_options",
    "progress_text",
    "read_any",
    "read_findings",
    "recorded_ids",
    "reference_run",
    "render_failures",
    "render_selftest_problems",
    "repeated_outcomes",
    "replay_command",
    "replay_drive",
    "run_agent_case",
    "run_app_single",
    "run_case",
    "run_selftest",
    "run_single",
    "use_color",
    "workdir",
    "write_findings",
    "write_fuzz_report",
    "write_report",
    "write_selftest_report",
]

# name -> the module that defines it, imported on first use: a process that
# needs one room (the MCP tool server, a fork-server child) pays for that room
# only, and the fuzzer (Hypothesis) only when fuzzing.
_ON_USE = {
    "find_adapter": "faultlab.lab.agents",
    "adapter_template": "faultlab.lab.agents.scaffold",
    "check_agent": "faultlab.lab.blackbox.check",
    "repeated_outcomes": "faultlab.lab.blackbox.stability",
    "bundled_adapters": "faultlab.lab.agents",
    "list_agents": "faultlab.lab.agents",
    "Style": "faultlab.lab.report.console",
    "use_color": "faultlab.lab.report.console",
    "progress_text": "faultlab.lab.report.console",
    "group_failures": "faultlab.lab.report.console",
    "render_failures": "faultlab.lab.report.console",
    "render_selftest_problems": "faultlab.lab.report.console",
    "findings_markdown": "faultlab.lab.report.findings",
    "read_findings": "faultlab.lab.report.findings",
    "write_findings": "faultlab.lab.report.findings",
    "inspect_agent_log": "faultlab.lab.report.agentinspect",
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
    "MAX_TIMEOUT": "faultlab.lab.errors",
    "MIN_TIMEOUT": "faultlab.lab.errors",
    "check_jobs": "faultlab.lab.errors",
    "check_timeout": "faultlab.lab.errors",
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
    "run_app_single": "faultlab.lab.campaigns.api",
    "make_drive": "faultlab.lab.campaigns.api",
    "replay_drive": "faultlab.lab.campaigns.api",
    "Selection": "faultlab.lab.campaigns.select",
    "last_failed": "faultlab.lab.report.recent",
    "replay_command": "faultlab.lab.report",
    "app_matrix": "faultlab.lab.campaigns.appexplore",
    "by_mode": "faultlab.lab.campaigns.appexplore",
    "explore": "faultlab.lab.campaigns.engine",
    "BisectResult": "faultlab.lab.campaigns.bisect",
    "Lag": "faultlab.lab.campaigns.bisect",
    "bisect_delays": "faultlab.lab.campaigns.bisect",
    "fuzz": "faultlab.lab.campaigns.engine",
    "run_case": "faultlab.lab.campaigns.engine",
    "DRIVE_NAMES": "faultlab.lab.drives",
    "Drive": "faultlab.lab.drives",
    "drive_accepts": "faultlab.lab.drives",
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


# exported name -> its name in the module that defines it
_RENAMED = {"install_agent": "install"}
_ON_USE["install_agent"] = "faultlab.lab.agents"


def __getattr__(name: str) -> Any:
    module = _ON_USE.get(name)
    if module is None:
        raise AttributeError(f"module 'faultlab.lab' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), _RENAMED.get(name, name))
    globals()[name] = value
    return value
