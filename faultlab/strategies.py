# Hypothesis strategies for crash testing: random but valid scenarios, the
# kill points a scenario really reaches (found by a dry run on the target),
# faults, and whole cases combining them.  Thin: the strategies are built in
# `faultlab.lab.campaigns.strategies`, which this module re-exports.
#
#     from hypothesis import given, settings
#     from faultlab import strategies as fs
#
#     @settings(deadline=None, max_examples=50)
#     @given(fs.cases(policy="semantic"))
#     def test_recovers(generated): ...
from __future__ import annotations

from faultlab.lab.campaigns.strategies import GeneratedCase, cases, faults, kill_points, scenarios

__all__ = ["GeneratedCase", "cases", "faults", "kill_points", "scenarios"]
