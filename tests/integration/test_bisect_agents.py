# Delays by bisection with real agent processes (issue 34): an agent that
# persists on a write-behind timer (the zoo's bb_async_persist) loses the
# charge when killed right after the tool applied it and keeps it later, so
# bisection finds a lag (lost up to X ms, safe from Y ms, X < Y) with cases
# that fail with the codes of the loss; the reference agent, which holds its
# session durable at every boundary, is safe at both ends and is probed at
# those two delays only.  A resolution of 500 ms is enough to split 0 from
# 1000 ms once around the variant's 300 ms timer (each probe is two agent
# processes; a finer one only adds probes near the timer, races under load).
from __future__ import annotations

from pathlib import Path

import pytest

from faultlab import lab
from faultlab.lab.campaigns.selftest import variant_adapter
from faultlab.lab.campaigns.zoo import default_zoo_path, load_zoo

ROOT = Path(__file__).resolve().parents[2]
PAYMENT = ROOT / "scenarios" / "payment.toml"
pytestmark = pytest.mark.realprocess


def bisect(tmp_path: Path, agent: str) -> lab.BisectResult:
    drive = lab.make_drive("agent", workdir=tmp_path / "work", timeout=60, agent=agent)
    return lab.bisect_delays(drive, lab.load_scenarios([PAYMENT]), faults=["sigkill"], jobs=2,
                             keyword="tool/applied#1", resolution_ms=500)  # fmt: skip


@pytest.mark.heavy(60)
def test_bisection_finds_the_lag_of_a_write_behind_agent(tmp_path: Path) -> None:
    zoo = load_zoo(default_zoo_path())
    (variant,) = [v for v in zoo.variants if v.name == "bb_async_persist"]
    found = bisect(tmp_path, variant_adapter(variant, tmp_path / "adapter"))
    (lag,) = found.lags
    assert lag.key == "payment.toml::tool/applied#1[sigkill]"
    assert lag.lost_up_to is not None and lag.safe_from is not None, lag.summary()
    assert lag.lost_up_to < lag.safe_from <= 1000
    assert 0 in lag.runs and 1000 in lag.runs and len(lag.runs) >= 3  # bisected
    lost = [r for r in found.explored.results if not r.passed]
    assert lost and all("@" in r.case.occurrence for r in lost)
    assert {"TOOL_INTENT_LOST", "SIDE_EFFECT_DUPLICATED"} & {c for r in lost for c in r.codes}
    coverage = [r for r in found.explored.results if r.case.occurrence == lab.COVERAGE]
    assert len(coverage) == 1 and coverage[0].passed  # the fault-free run, once


def test_an_agent_without_lag_is_probed_at_both_ends_only(tmp_path: Path) -> None:
    found = bisect(tmp_path, "reference")
    (lag,) = found.lags
    assert sorted(lag.runs) == [0, 1000] and lag.safe_from == 0, lag.summary()
    assert found.explored.passed and found.rounds == 1  # the ends agree: no second round
    assert len(found.explored.results) == 3  # coverage + the two ends
