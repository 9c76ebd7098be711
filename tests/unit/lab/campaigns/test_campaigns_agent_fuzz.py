# `fuzz --agent`'s kill points: drawn by Hypothesis from what the fault-free
# run reached, distinct, within the delay bound, the same for the same seed.
from __future__ import annotations

import pytest

from faultlab.lab.campaigns.blackboxexplore import draw_kill_points
from faultlab.lab.errors import LabUsageError

REACHED = ["model/request#1", "model/chunk#1", "tool/received#1", "tool/applied#1",
           "tool/replied#1", "model/request#2"]  # fmt: skip


def test_the_draws_are_distinct_reached_bounded_and_reproducible() -> None:
    first = draw_kill_points(REACHED, count=12, seed=3, faults=["sigkill", "sigkill-agent"],
                             max_delay_ms=400)  # fmt: skip
    assert len(first) == 12 == len(set(first))
    assert {p.occurrence for p, _ in first} <= set(REACHED)
    assert all(0 <= p.delay_ms <= 400 for p, _ in first)
    assert {f for _, f in first} <= {"sigkill", "sigkill-agent"}
    again = draw_kill_points(REACHED, count=12, seed=3, faults=["sigkill", "sigkill-agent"],
                             max_delay_ms=400)  # fmt: skip
    assert again == first
    other = draw_kill_points(REACHED, count=12, seed=4, faults=["sigkill", "sigkill-agent"],
                             max_delay_ms=400)  # fmt: skip
    assert other != first


def test_delays_are_not_only_the_explored_ones() -> None:
    drawn = draw_kill_points(REACHED, count=30, seed=1, faults=["sigkill"], max_delay_ms=1000)
    assert {p.delay_ms for p, _ in drawn} - {0, 50, 200, 1000}


def test_fewer_distinct_points_than_asked_are_all_of_them() -> None:
    drawn = draw_kill_points(["tool/applied#1"], count=5, seed=0, faults=["sigkill"],
                             max_delay_ms=0)  # fmt: skip
    assert [(str(p), f) for p, f in drawn] == [("tool/applied#1@0ms", "sigkill")]


@pytest.mark.parametrize(("count", "delay", "reached"), [(0, 10, REACHED), (3, -1, REACHED),
                                                          (3, 10, [])])  # fmt: skip
def test_bad_arguments_are_refused(count: int, delay: int, reached: list[str]) -> None:
    with pytest.raises(LabUsageError, match="fuzzing an agent"):
        draw_kill_points(reached, count=count, seed=0, faults=["sigkill"], max_delay_ms=delay)
