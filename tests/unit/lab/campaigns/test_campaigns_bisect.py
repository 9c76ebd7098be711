# Delays by bisection, its pure parts: which delays a probe asks for next
# (the two ends, the midpoint of neighbours that disagree, more runs where
# runs disagree) and how a boundary's lag is read off its runs.
from __future__ import annotations

from click.testing import CliRunner

from faultlab.cli import main
from faultlab.lab.campaigns.bisect import RACE_RUNS, Lag, _Probe

LOST = ("fail", ("TOOL_INTENT_LOST",))
SAFE = ("pass", ())


def probe(**runs: list[tuple[str, tuple[str, ...]]]) -> _Probe:
    found = _Probe("/s/payment.toml", "tool/applied#1", "sigkill")
    found.runs = {int(k[1:]): list(v) for k, v in runs.items()}
    return found


def test_the_ends_first_then_the_midpoint_of_neighbours_that_disagree() -> None:
    assert probe().wanted(2, 1000, 25) == {0: 2, 1000: 2}
    assert probe().wanted(1, 0, 25) == {0: 1}
    assert probe(d0=[LOST], d1000=[LOST]).wanted(1, 1000, 25) == {}  # never changes
    assert probe(d0=[LOST], d1000=[SAFE]).wanted(1, 1000, 25) == {500: 1}
    # closer than the resolution: done
    assert probe(d0=[LOST], d20=[SAFE], d1000=[SAFE]).wanted(1, 1000, 25) == {}


def test_a_race_gets_more_runs_and_is_bisected_on_both_sides() -> None:
    raced = probe(d0=[LOST, LOST], d500=[LOST, SAFE], d1000=[SAFE, SAFE])
    assert raced.wanted(2, 1000, 25) == {500: RACE_RUNS - 2, 250: 2, 750: 2}


def test_the_lag_reads_lost_up_to_race_and_safe_from() -> None:
    lag = Lag("/s/payment.toml", "tool/applied#1", "sigkill",
              {0: (LOST,), 250: (LOST,), 375: (LOST, SAFE), 500: (SAFE,), 1000: (SAFE,)})
    assert (lag.lost_up_to, lag.races, lag.safe_from) == (250, (375,), 500)
    assert lag.summary() == (
        "payment.toml::tool/applied#1[sigkill]: lost up to 250 ms after the boundary, a race "
        "at 375 ms, safe from 500 ms (0 ms 1/1 lost, 250 ms 1/1 lost, 375 ms 1/2 lost, "
        "500 ms 0/1 lost, 1000 ms 0/1 lost)"
    )
    always = Lag("/s/p.toml", "model/request#1", "sigkill", {0: (LOST,), 1000: (LOST,)})
    assert "lost at every delay probed (0 to 1000 ms)" in always.summary()
    never = Lag("/s/p.toml", "model/request#1", "sigkill", {0: (SAFE,), 1000: (SAFE,)})
    assert "safe at every delay probed" in never.summary()
    assert never.to_json()["safeFromMs"] == 0


def test_bisect_is_refused_where_it_does_not_apply() -> None:
    for args, needle in (
        (["scenarios/payment.toml"], "--delays bisect applies to --agent only"),
        (["--agent", "reference", "--shard", "1/2"], "cannot be combined with --shard"),
        (["--agent", "reference", "-x"], "cannot be combined"),
    ):
        result = CliRunner().invoke(main, ["explore", *args, "--delays", "bisect"])
        assert result.exit_code == 2 and needle in result.stderr, result.stderr
