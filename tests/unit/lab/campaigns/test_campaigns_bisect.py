# Delays by bisection, its pure parts: which delays a probe asks for next
# (one run at each end, one between neighbours that disagree, then repeats at
# the edges and more runs where runs disagree) and how a boundary's lag is
# read off its runs.
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


def test_one_run_at_each_end_then_one_between_neighbours_that_disagree() -> None:
    assert probe().wanted(3, 1000, 25) == {0: 1, 1000: 1}
    assert probe().wanted(3, 0, 25) == {0: 3}
    # the search: one run between, geometric while the gap spans a doubling
    assert probe(d0=[LOST], d1000=[SAFE]).wanted(3, 1000, 25) == {158: 1}
    assert probe(d0=[LOST], d158=[SAFE], d1000=[SAFE]).wanted(3, 1000, 25) == {62: 1}
    assert probe(d0=[LOST], d40=[SAFE], d1000=[SAFE]).wanted(3, 1000, 25) == {20: 1}
    assert probe(d200=[LOST], d300=[SAFE]).wanted(3, 1000, 25) == {250: 1}


def test_once_the_search_converged_only_the_edges_get_their_repeats() -> None:
    # closer than the resolution: the two delays beside the change, not 0 ms or 1000 ms
    lag = probe(d0=[LOST], d20=[LOST], d40=[SAFE], d158=[SAFE], d1000=[SAFE])
    assert lag.wanted(3, 1000, 25) == {20: 2, 40: 2}
    lag.runs[20] += [LOST, LOST]
    lag.runs[40] += [SAFE, SAFE]
    assert lag.wanted(3, 1000, 25) == {}  # a clean change: done
    # ends that agree: the end a change would be nearest
    assert probe(d0=[SAFE], d1000=[SAFE]).wanted(3, 1000, 25) == {0: 2}
    assert probe(d0=[LOST], d1000=[LOST]).wanted(3, 1000, 25) == {1000: 2}
    assert probe(d0=[SAFE] * 3, d1000=[SAFE]).wanted(3, 1000, 25) == {}


def test_a_race_gets_more_runs_and_the_search_goes_where_safety_changes() -> None:
    raced = probe(d0=[LOST, LOST], d500=[LOST, SAFE], d1000=[SAFE, SAFE])
    assert raced.wanted(2, 1000, 25) == {750: 1}  # not between 0 and 500: neither was safe
    raced = probe(d0=[LOST], d20=[LOST, SAFE], d40=[SAFE], d1000=[SAFE])
    assert raced.wanted(2, 1000, 25) == {20: RACE_RUNS - 2, 40: 1}
    # a loss at a safe edge moves the change: the search goes on above it
    moved = probe(d0=[LOST], d20=[LOST] * 3, d40=[SAFE, SAFE, LOST], d1000=[SAFE])
    assert moved.wanted(3, 1000, 25) == {200: 1}


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
