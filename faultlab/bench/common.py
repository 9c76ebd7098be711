# What every benchmark shares: running the sides of a comparison side by side
# (once per round, the order alternating, so that they share the machine's
# noise), their medians, the progress callback, and the error of a benchmark
# that could not measure.  It sits below every figure's module, so that no
# figure imports another and `faultlab.bench.runner` can import them all.
from __future__ import annotations

import gc
import statistics
from collections.abc import Callable, Sequence
from typing import TypeVar

__all__ = ["BenchError", "Say", "median", "quiet", "side_by_side"]

T = TypeVar("T")
Say = Callable[[str], None]


class BenchError(RuntimeError):
    """A benchmark could not measure what it meant to (not a slow result)."""


def quiet(_text: str) -> None:
    pass


def side_by_side(rounds: int, sides: Sequence[Callable[[], T]]) -> list[list[T]]:
    """Run every side once per round, alternating the order (A,B then B,A), so
    the sides share the machine's noise and neither always goes first."""
    samples: list[list[T]] = [[] for _ in sides]
    for round_ in range(rounds):
        order = range(len(sides)) if round_ % 2 == 0 else reversed(range(len(sides)))
        for index in order:
            gc.collect()
            samples[index].append(sides[index]())
    return samples


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values))
