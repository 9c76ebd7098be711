# The order an exploration with several jobs starts its cases in: every
# scenario's cases spread over the whole run, each scenario in its own order.
from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from faultlab.lab.campaigns.explore import spread_order
from faultlab.lab.oracle.case import Case


def _cases(counts: list[int]) -> list[Case]:
    return [
        Case(f"s{scenario}.toml", f"tool/durable#{n}")
        for scenario, count in enumerate(counts)
        for n in range(1, count + 1)
    ]


def test_scenarios_are_mixed_instead_of_run_one_after_another() -> None:
    cases = _cases([4, 2, 2])
    order = [cases[index].scenario for index in spread_order(cases)]
    assert order == [
        "s0.toml", "s1.toml", "s2.toml", "s0.toml",
        "s0.toml", "s1.toml", "s2.toml", "s0.toml",
    ]  # fmt: skip


def test_one_scenario_keeps_its_order() -> None:
    cases = _cases([5])
    assert spread_order(cases) == list(range(5))


@given(st.lists(st.integers(min_value=0, max_value=12), max_size=6))
def test_every_case_starts_once_and_each_scenario_in_order(counts: list[int]) -> None:
    cases = _cases(counts)
    order = spread_order(cases)
    assert sorted(order) == list(range(len(cases)))
    for scenario in {case.scenario for case in cases}:
        mine = [index for index in order if cases[index].scenario == scenario]
        assert mine == sorted(mine)


@given(st.lists(st.integers(min_value=1, max_value=12), min_size=2, max_size=6))
def test_each_case_starts_where_its_share_of_the_run_says(counts: list[int]) -> None:
    # The k-th of a scenario's n cases starts about (k + 1/2) / n of the way
    # through the run, give or take the number of scenarios.
    cases = _cases(counts)
    order = spread_order(cases)
    total, scenarios = len(cases), len(counts)
    for position, index in enumerate(order):
        case = cases[index]
        count = counts[int(case.scenario[1:-5])]
        share = (int(case.occurrence.split("#")[1]) - 0.5) / count
        assert abs(position - share * total) <= 1.5 * scenarios + 1, (counts, case, position)
