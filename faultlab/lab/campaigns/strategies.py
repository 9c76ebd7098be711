# The Hypothesis strategies behind the public `faultlab.strategies`: random but
# valid scenarios, the kill points a scenario really reaches (found by a dry
# run on the target), faults, and whole cases combining them.  Every argument
# is checked and refused with `InvalidArgument`.  The scenario shapes live in
# `faultlab.lab.campaigns.shapes`, the dry runs in `faultlab.lab.campaigns.dryrun`.
from __future__ import annotations

from collections.abc import Sequence

from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from faultlab.lab.campaigns.dryrun import GeneratedCase, default_dry_runs
from faultlab.lab.errors import LabUsageError, check_timeout
from faultlab.probe import FAULTS
from faultlab.scenario import POLICIES, Scenario

__all__ = ["GeneratedCase", "cases", "faults", "kill_points", "scenarios"]


def _check_int(name: str, value: object, low: int, high: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise InvalidArgument(f"{name} must be an integer, not {value!r}")
    if not low <= value <= high:
        raise InvalidArgument(f"{name} must be between {low} and {high}, not {value}")
    return value


def _check_names(name: str, values: object, valid: Sequence[str]) -> tuple[str, ...]:
    if isinstance(values, str) or not isinstance(values, Sequence) or not values:
        raise InvalidArgument(f"{name} must be a non-empty sequence of names, not {values!r}")
    for value in values:
        if value not in valid:
            raise InvalidArgument(f"{name}: unknown {value!r} (valid: {', '.join(valid)})")
    return tuple(dict.fromkeys(values))


def scenarios(
    *, max_turns: int = 2, max_steps: int = 3, max_tools: int = 3, max_calls: int = 3,
    policies: Sequence[str] = ("semantic",), careful: bool | None = None,
    name: str = "fuzz",
) -> st.SearchStrategy[Scenario]:  # fmt: skip
    """Valid scripted sessions: 1..`max_turns` turns of up to `max_steps` model
    steps (the last one answers in text), up to `max_tools` tools with every
    annotation combination (plus observer tools that verify them), up to
    `max_calls` calls per step, parallel groups, nested calls, and a careful
    model (branches that verify or retry safely after repair) or a careless
    one (no branches); `careful=None` draws both."""
    _check_int("max_turns", max_turns, 1, 10)
    _check_int("max_steps", max_steps, 1, 10)
    _check_int("max_tools", max_tools, 0, 10)
    _check_int("max_calls", max_calls, 1, 10)
    chosen = _check_names("policies", policies, POLICIES)
    if careful is not None and not isinstance(careful, bool):
        raise InvalidArgument(f"careful must be True, False or None, not {careful!r}")
    from faultlab.lab.campaigns.shapes import Limits, scenario_shapes
    from faultlab.scenario.parse import SCENARIO_NAME

    if not isinstance(name, str) or not SCENARIO_NAME.fullmatch(name):
        raise InvalidArgument(f"name must be letters, digits, '-', '_', '.', not {name!r}")
    limits = Limits(max_turns, max_steps, max_tools, max_calls, chosen, careful, name)
    return scenario_shapes(limits)


def faults(*, include: Sequence[str] = FAULTS) -> st.SearchStrategy[str]:
    """Fault names from `include` (default: every fault); shrinks towards the first."""
    return st.sampled_from(_check_names("include", include, FAULTS))


def _check_timeout(timeout: object) -> float:
    try:
        return check_timeout(timeout)
    except LabUsageError as exc:
        raise InvalidArgument(str(exc)) from None


def kill_points(
    scenario: Scenario, *, policy: str | None = None,
    target: Sequence[str] | str | None = None, timeout: float = 60.0,
) -> st.SearchStrategy[str]:  # fmt: skip
    """Boundary occurrences (`tool/durable#2`) that `scenario` reaches on the
    target, found by one fault-free dry run now (cached per scenario).  Raises
    InvalidArgument when the dry run fails: a kill point must be reachable."""
    if not isinstance(scenario, Scenario):
        raise InvalidArgument(f"scenario must be a Scenario, not {type(scenario).__name__}")
    runs = default_dry_runs(policy=policy, target=target, timeout=_check_timeout(timeout))
    reference = runs.reference(scenario)
    if reference.returncode != 0 or reference.hung or not reference.occurrences:
        detail = reference.stderr.strip().splitlines()[-1:] or ["no boundary reached"]
        raise InvalidArgument(
            f"the dry run of {scenario.name} exited with status {reference.returncode}: {detail[0]}"
        )
    return st.sampled_from(reference.occurrences)


def cases(
    *, scenarios: st.SearchStrategy[Scenario] | None = None,
    faults: Sequence[str] = ("sigkill",), policy: str | None = None,
    target: Sequence[str] | str | None = None, timeout: float = 60.0,
) -> st.SearchStrategy[GeneratedCase]:  # fmt: skip
    """A scenario (default `scenarios()`), dry-run on the target, and one of
    its applicable (kill point, fault) cases for `faults`.  A scenario whose
    dry run fails gives its coverage case, which reports the failure."""
    fault_names = _check_names("faults", faults, FAULTS)
    chosen = _default_scenarios() if scenarios is None else scenarios
    if not isinstance(chosen, st.SearchStrategy):
        raise InvalidArgument(f"scenarios must be a strategy, not {type(chosen).__name__}")
    runs = default_dry_runs(policy=policy, target=target, timeout=_check_timeout(timeout))
    from faultlab.lab.campaigns.shapes import cases_on

    return cases_on(runs, chosen, fault_names)


def _default_scenarios() -> st.SearchStrategy[Scenario]:
    return scenarios()
