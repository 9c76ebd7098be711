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

from typing import TYPE_CHECKING

from faultlab.lab.process.exports import exports_on_use

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

# Each name is imported on first use: a process that needs one room (the MCP
# tool server, a fork-server child) pays for that room only, and the fuzzer
# (Hypothesis) only when fuzzing.
_NAMES = {  # module: the names it defines that the package re-exports
    "agents": "bundled_adapters find_adapter install_agent list_agents",
    "faultlab.lab.agents.scaffold": "adapter_template",
    "faultlab.lab.blackbox.check": "check_agent",
    "faultlab.lab.blackbox.stability": "repeated_outcomes",
    "faultlab.lab.campaigns.api": (
        "DRIVES SUPPORTED_FAULTS bundled_scenarios check_drive explore_agent "
        "explore_paths explore_scenarios fuzz_agent load_scenarios make_drive make_target "
        "parse_faults reference_run replay_drive run_agent_case run_app_single run_single "
        "workdir"
    ),
    "faultlab.lab.campaigns.appexplore": "app_matrix by_mode",
    "faultlab.lab.campaigns.bisect": "BisectResult Lag bisect_delays",
    "faultlab.lab.campaigns.engine": "explore fuzz run_case",
    "faultlab.lab.campaigns.explore": (
        "COVERAGE ExploreResult FaultTally Interrupted Shard fault_tally parse_shard"
    ),
    "faultlab.lab.campaigns.fuzz": "FuzzInterrupted FuzzResult FuzzSettings fuzz_campaign",
    "faultlab.lab.campaigns.pytest_glue": (
        "CrashLab PluginOptions ScenarioProblem ScenarioRun failure_text plan_scenario "
        "plugin_options"
    ),
    "faultlab.lab.campaigns.select": "Selection",
    "faultlab.lab.campaigns.selftest": (
        "SelftestInterrupted SelftestResult SelftestRow run_selftest"
    ),
    "faultlab.lab.campaigns.zoo": "Zoo ZooVariant default_zoo_path load_zoo",
    "drives": "DRIVE_NAMES Drive drive_accepts",
    "errors": "LabUsageError MAX_TIMEOUT MIN_TIMEOUT check_jobs check_timeout",
    "oracle": "Case CaseResult GUARANTEES Verdict Violation check_coverage explain",
    "process": "LabOptions Reference",
    "read": "LogEvent LogView find_log read_any",
    "report": (
        "Inspection MergeResult RunInfo check_report_dir find_case format_table "
        "ground_truth_line inspect_log merge_reports new_run_id recorded_ids "
        "replay_command write_report write_selftest_report"
    ),
    "faultlab.lab.report.agentinspect": "inspect_agent_log",
    "faultlab.lab.report.console": (
        "Style group_failures progress_text render_failures render_selftest_problems "
        "use_color"
    ),
    "faultlab.lab.report.findings": "findings_markdown read_findings write_findings",
    "faultlab.lab.report.fuzz": "write_fuzz_report",
    "faultlab.lab.report.recent": "last_failed",
}

__getattr__ = exports_on_use(__name__, _NAMES, renamed={"install_agent": "install"})
