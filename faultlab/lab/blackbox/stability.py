# How stable one black-box case is over repeats (`faultlab run --agent
# --repeats N`): agents persist asynchronously, so one kill point can pass in
# one run and lose work in the next.  The outcomes are counted by the set of
# codes each run gave, each share with its Wilson score interval (95 %), so a
# row of the stability table says how sure it is, not only what it saw; the
# table itself (`stability_markdown`) is made by benchmarks/agent_stability.py.
from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["STABILITY_END", "STABILITY_START", "Outcome", "StabilityRow", "repeated_outcomes",
           "stability_markdown", "wilson_interval"]

_Z95 = 1.959963984540054  # the normal quantile of a two-sided 95 % interval


@dataclass(frozen=True, slots=True)
class Outcome:
    """One outcome of a repeated case: its codes (none: it passed), in how
    many of the runs, and the 95 % interval of its share."""

    codes: tuple[str, ...]
    count: int
    runs: int
    low: float
    high: float

    @property
    def label(self) -> str:
        return self._label("")

    def _label(self, quote: str) -> str:
        return " + ".join(f"{quote}{c}{quote}" for c in self.codes) or "pass"

    def describe(self, *, markdown: bool = False) -> str:
        """"CODE + CODE k/n (95% interval lo-hi)"; for a table cell whose
        column names the interval, the codes as code and the interval bare."""
        if markdown:
            return f"{self._label('`')} {self.count}/{self.runs} ({self.low:.0%}-{self.high:.0%})"
        return (f"{self.label} {self.count}/{self.runs} "
                f"(95% interval {self.low:.0%}-{self.high:.0%})")  # fmt: skip


def wilson_interval(count: int, runs: int) -> tuple[float, float]:
    """The Wilson score interval of `count` successes in `runs` trials."""
    if runs < 1 or not 0 <= count <= runs:
        raise ValueError(f"{count} of {runs} runs is not a share")
    share = count / runs
    spread = _Z95 * _Z95 / runs
    centre = (share + spread / 2) / (1 + spread)
    half = _Z95 * math.sqrt(share * (1 - share) / runs + spread / (4 * runs)) / (1 + spread)
    return max(0.0, centre - half), min(1.0, centre + half)


def repeated_outcomes(codes_per_run: Sequence[Sequence[str]]) -> list[Outcome]:
    """The outcomes of the runs, the most frequent first (passes first on a tie)."""
    runs = len(codes_per_run)
    counted = Counter(tuple(sorted(set(codes))) for codes in codes_per_run)
    ordered = sorted(counted.items(), key=lambda item: (-item[1], bool(item[0]), item[0]))
    return [Outcome(codes, count, runs, *wilson_interval(count, runs))
            for codes, count in ordered]  # fmt: skip


STABILITY_START = (
    "<!-- stability:start (python3 benchmarks/agent_stability.py --write docs/agents.md) -->"
)
STABILITY_END = "<!-- stability:end -->"


@dataclass(frozen=True, slots=True)
class StabilityRow:
    """One kill point of one agent, repeated: what each run gave."""

    agent: str
    version: str
    scenario: str
    kill_point: str
    fault: str
    codes_per_run: tuple[tuple[str, ...], ...]

    def outcomes(self) -> list[Outcome]:
        return repeated_outcomes(self.codes_per_run)


def stability_markdown(rows: Sequence[StabilityRow]) -> str:
    """The stability table: a row per (agent, scenario, kill point, fault),
    its outcomes the most frequent first, each with its 95 % interval."""
    lines = ["| agent | version | scenario | kill point | fault | runs | outcomes (95% interval) |",
             "|---|---|---|---|---|---|---|"]  # fmt: skip
    for row in sorted(rows, key=lambda r: (r.agent, r.scenario, r.kill_point, r.fault)):
        told = "; ".join(o.describe(markdown=True) for o in row.outcomes())
        lines.append(f"| {row.agent} | {row.version} | {row.scenario} | `{row.kill_point}` | "
                     f"{row.fault} | {len(row.codes_per_run)} | {told} |")  # fmt: skip
    return "\n".join(lines) + "\n"
