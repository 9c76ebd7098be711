# Many cases at once: explore (every boundary x fault), fuzz, selftest and its
# zoo, the determinism check, dry runs, and what the pytest plugin runs.
# Every name is imported when first used (`__getattr__` below): importing one
# module of the package must not import them all (pytest_glue imports pytest,
# selftest the zoo), which every command paid at start.
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

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

_HOMES = {
    "COVERAGE": "faultlab.lab.campaigns.explore",
    "CrashLab": "faultlab.lab.campaigns.pytest_glue",
    "DRIVES": "faultlab.lab.campaigns.targets",
    "DryRuns": "faultlab.lab.campaigns.dryrun",
    "ExploreResult": "faultlab.lab.campaigns.explore",
    "GeneratedCase": "faultlab.lab.campaigns.dryrun",
    "NONDETERMINISTIC": "faultlab.lab.campaigns.determinism",
    "PluginOptions": "faultlab.lab.campaigns.pytest_glue",
    "QuickCase": "faultlab.lab.campaigns.zoo",
    "REFERENCE": "faultlab.lab.campaigns.selftest",
    "SUPPORTED_FAULTS": "faultlab.lab.campaigns.api",
    "ScenarioProblem": "faultlab.lab.campaigns.pytest_glue",
    "ScenarioRun": "faultlab.lab.campaigns.pytest_glue",
    "SelftestResult": "faultlab.lab.campaigns.selftest",
    "SelftestRow": "faultlab.lab.campaigns.selftest",
    "Shard": "faultlab.lab.campaigns.explore",
    "Zoo": "faultlab.lab.campaigns.zoo",
    "ZooVariant": "faultlab.lab.campaigns.zoo",
    "applicable_cases": "faultlab.lab.campaigns.dryrun",
    "bundled_scenarios": "faultlab.lab.campaigns.api",
    "check_acp_backend": "faultlab.lab.campaigns.targets",
    "check_determinism": "faultlab.lab.campaigns.determinism",
    "check_drive": "faultlab.lab.campaigns.targets",
    "check_drive_name": "faultlab.lab.campaigns.targets",
    "check_fault": "faultlab.lab.campaigns.targets",
    "default_dry_runs": "faultlab.lab.campaigns.dryrun",
    "default_zoo_path": "faultlab.lab.campaigns.zoo",
    "explore": "faultlab.lab.campaigns.explore",
    "explore_paths": "faultlab.lab.campaigns.api",
    "explore_scenarios": "faultlab.lab.campaigns.api",
    "failure_text": "faultlab.lab.campaigns.pytest_glue",
    "fuzz_campaign": "faultlab.lab.campaigns.selftest",
    "judge_reference": "faultlab.lab.campaigns.selftest",
    "judge_variant": "faultlab.lab.campaigns.selftest",
    "load_scenarios": "faultlab.lab.campaigns.api",
    "load_zoo": "faultlab.lab.campaigns.zoo",
    "make_target": "faultlab.lab.campaigns.targets",
    "normalise_lines": "faultlab.lab.campaigns.determinism",
    "parse_faults": "faultlab.lab.campaigns.targets",
    "parse_shard": "faultlab.lab.campaigns.explore",
    "plan_cases": "faultlab.lab.campaigns.explore",
    "plan_scenario": "faultlab.lab.campaigns.pytest_glue",
    "plugin_options": "faultlab.lab.campaigns.pytest_glue",
    "reference_run": "faultlab.lab.campaigns.api",
    "run_exploration": "faultlab.lab.campaigns.explore",
    "run_one": "faultlab.lab.campaigns.explore",
    "run_selftest": "faultlab.lab.campaigns.selftest",
    "run_single": "faultlab.lab.campaigns.api",
    "spread_order": "faultlab.lab.campaigns.explore",
    "tidy_passed": "faultlab.lab.campaigns.explore",
    "workdir": "faultlab.lab.campaigns.api",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value
