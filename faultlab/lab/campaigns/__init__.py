# Many cases at once: explore (every boundary x fault), fuzz, selftest and its
# zoo, the determinism check, dry runs, and what the pytest plugin runs.
# Every name is imported when first used (`__getattr__` below): importing one
# module of the package must not import them all (pytest_glue imports pytest,
# selftest the zoo), which every command paid at start.
from __future__ import annotations

from typing import TYPE_CHECKING

from faultlab.lab.process.exports import exports_on_use

if TYPE_CHECKING:
    from faultlab.lab.campaigns.api import (
        SUPPORTED_FAULTS,
        bundled_scenarios,
        explore_paths,
        explore_scenarios,
        load_scenarios,
        reference_run,
        run_single,
        workdir,
    )
    from faultlab.lab.campaigns.determinism import (
        NONDETERMINISTIC,
        check_determinism,
        normalise_lines,
    )
    from faultlab.lab.campaigns.dryrun import (
        DryRuns,
        GeneratedCase,
        applicable_cases,
        default_dry_runs,
    )
    from faultlab.lab.campaigns.explore import (
        COVERAGE,
        ExploreResult,
        Shard,
        explore,
        parse_shard,
        plan_cases,
        run_exploration,
        run_one,
        spread_order,
        tidy_passed,
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
        REFERENCE,
        SelftestResult,
        SelftestRow,
        fuzz_campaign,
        judge_reference,
        judge_variant,
        run_selftest,
    )
    from faultlab.lab.campaigns.targets import (
        DRIVES,
        check_acp_backend,
        check_drive,
        check_drive_name,
        check_fault,
        make_target,
        parse_faults,
    )
    from faultlab.lab.campaigns.zoo import (
        QuickCase,
        Zoo,
        ZooVariant,
        default_zoo_path,
        load_zoo,
    )

# Imported on use, not here, because they pull in heavy libraries: `acpexplore`
# (the ACP SDK), `fuzz`, `strategies` and `shapes` (Hypothesis).

__all__ = [
    "COVERAGE",
    "DRIVES",
    "NONDETERMINISTIC",
    "REFERENCE",
    "SUPPORTED_FAULTS",
    "CrashLab",
    "DryRuns",
    "ExploreResult",
    "GeneratedCase",
    "PluginOptions",
    "QuickCase",
    "ScenarioProblem",
    "ScenarioRun",
    "SelftestResult",
    "SelftestRow",
    "Shard",
    "Zoo",
    "ZooVariant",
    "applicable_cases",
    "bundled_scenarios",
    "check_acp_backend",
    "check_determinism",
    "check_drive",
    "check_drive_name",
    "check_fault",
    "default_dry_runs",
    "default_zoo_path",
    "explore",
    "explore_paths",
    "explore_scenarios",
    "failure_text",
    "fuzz_campaign",
    "judge_reference",
    "judge_variant",
    "load_scenarios",
    "load_zoo",
    "make_target",
    "normalise_lines",
    "parse_faults",
    "parse_shard",
    "plan_cases",
    "plan_scenario",
    "plugin_options",
    "reference_run",
    "run_exploration",
    "run_one",
    "run_selftest",
    "run_single",
    "spread_order",
    "tidy_passed",
    "workdir",
]

_NAMES = {  # module: the names it defines that the package re-exports
    "api": (
        "SUPPORTED_FAULTS bundled_scenarios explore_paths explore_scenarios "
        "load_scenarios reference_run run_single workdir"
    ),
    "determinism": "NONDETERMINISTIC check_determinism normalise_lines",
    "dryrun": "DryRuns GeneratedCase applicable_cases default_dry_runs",
    "explore": (
        "COVERAGE ExploreResult Shard explore parse_shard plan_cases run_exploration "
        "run_one spread_order tidy_passed"
    ),
    "pytest_glue": (
        "CrashLab PluginOptions ScenarioProblem ScenarioRun failure_text plan_scenario "
        "plugin_options"
    ),
    "selftest": (
        "REFERENCE SelftestResult SelftestRow fuzz_campaign judge_reference judge_variant "
        "run_selftest"
    ),
    "targets": (
        "DRIVES check_acp_backend check_drive check_drive_name check_fault make_target "
        "parse_faults"
    ),
    "zoo": "QuickCase Zoo ZooVariant default_zoo_path load_zoo",
}

__getattr__ = exports_on_use(__name__, _NAMES)
