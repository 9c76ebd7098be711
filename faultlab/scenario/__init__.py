# Scenario files -> validated, frozen `Scenario` objects and back: the values in
# `model`, the reader in `parse` (over `tables`, `locate`, `chunking`, and the
# size limits in `limits`), the writer in `write`.
from __future__ import annotations

from faultlab.scenario.model import (
    BACKENDS,
    BRANCH_CODES,
    EFFECTS,
    FORMAT_VERSION,
    POLICIES,
    Branch,
    Effect,
    Expectation,
    NestedCall,
    Policy,
    Scenario,
    ScenarioError,
    Step,
    ToolCallSpec,
    ToolSpec,
    Turn,
)
from faultlab.scenario.parse import load_scenario, parse_scenario
from faultlab.scenario.write import dump_scenario

__all__ = [
    "BACKENDS",
    "BRANCH_CODES",
    "EFFECTS",
    "FORMAT_VERSION",
    "POLICIES",
    "Branch",
    "Effect",
    "Expectation",
    "NestedCall",
    "Policy",
    "Scenario",
    "ScenarioError",
    "Step",
    "ToolCallSpec",
    "ToolSpec",
    "Turn",
    "dump_scenario",
    "load_scenario",
    "parse_scenario",
]
