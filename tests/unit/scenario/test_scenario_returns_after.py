# `returns_after` (`returns_after_start`, issue 34): a tool body's latency
# ends as soon as a body of another tool has returned (started) in the same
# run, bounded by `latency_ms`.  The fuzzer's nested group orders `tick`
# after inner's start and `inner` after tock's return by them instead of
# timers of 30 and 300 ms.  It parses and round-trips, bad values are refused with the field
# named, the wait ends on the event (not on the clock), and the real
# reference runtime runs a 60 s-bounded body only as long as its event takes.
from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from faultlab.scenario import ScenarioError, ToolSpec, dump_scenario, parse_scenario
from faultlab.scenario.timing import BodyClock

GROUP = """
format = 1
name = "group"
max_parallel_tools = 2
[tools.inner]
read_only = true
latency_ms = {latency}
{returns}
[tools.outer]
read_only = true
parallel_safe = true
calls = [{{ tool = "inner" }}]
[tools.tick]
read_only = true
parallel_safe = true
latency_ms = 60000
returns_after_start = "inner"
[tools.tock]
read_only = true
parallel_safe = true
[[turns]]
user = "go"
  [[turns.steps]]
  tool_calls = [{{ tool = "outer" }}, {{ tool = "tick" }}, {{ tool = "tock" }}]
  [[turns.steps]]
  text = "done"
"""


def _group(*, latency: int = 60_000, returns: str = 'returns_after = "tock"') -> str:
    return GROUP.format(latency=latency, returns=returns)


def test_it_parses_and_round_trips() -> None:
    scenario = parse_scenario(_group(), path="g.toml")
    inner = scenario.tools[0]
    assert (inner.name, inner.returns_after, inner.latency_ms) == ("inner", "tock", 60_000)
    assert scenario.tools[2].returns_after_start == "inner"
    assert parse_scenario(dump_scenario(scenario), path="g.toml").tools == scenario.tools


@pytest.mark.parametrize(("returns", "latency", "message"), [
    ('returns_after = "nope"', 60_000, r"tools\.inner\.returns_after.*unknown tool 'nope'"),
    ('returns_after = "inner"', 60_000, r"returns_after.*cannot wait for its own body"),
    ('returns_after = "tock"\nreturns_after_start = "tock"', 60_000, r"not both"),
    ('returns_after = "tock"', 0, r"returns_after.*needs a latency_ms"),
    ("returns_after = 3", 60_000, r"returns_after"),
])  # fmt: skip
def test_bad_values_are_refused_naming_the_field(returns: str, latency: int, message: str) -> None:
    with pytest.raises(ScenarioError, match=message):
        parse_scenario(_group(latency=latency, returns=returns), path="g.toml")


@pytest.mark.parametrize("returns_after", [True, False])
def test_the_wait_ends_on_the_event_not_the_clock(returns_after: bool) -> None:
    async def main() -> tuple[bool, bool, bool]:
        clock = BodyClock()
        spec = (ToolSpec("inner", latency_ms=60_000, returns_after="tock") if returns_after
                else ToolSpec("tick", latency_ms=60_000, returns_after_start="inner"))  # fmt: skip
        waiter = asyncio.ensure_future(clock.latency(spec))
        for _ in range(3):
            await asyncio.sleep(0)
        before = waiter.done()
        # the other event of the same tool does not end the wait
        (clock.started if returns_after else clock.returned)("tock" if returns_after else "inner")
        for _ in range(5):
            await asyncio.sleep(0)
        other = waiter.done()
        (clock.returned if returns_after else clock.started)("tock" if returns_after else "inner")
        for _ in range(5):
            await asyncio.sleep(0)
        return before, other, waiter.done()

    assert asyncio.run(main()) == (False, False, True)


def test_a_plain_latency_still_waits_and_a_return_seen_before_counts() -> None:
    async def main() -> bool:
        clock = BodyClock()
        clock.returned("tock")  # tock returned before inner started waiting
        await asyncio.wait_for(clock.latency(ToolSpec("i", latency_ms=60_000,
                                                      returns_after="tock")), 30)  # fmt: skip
        plain = asyncio.ensure_future(clock.latency(ToolSpec("p", latency_ms=60_000)))
        for _ in range(5):
            await asyncio.sleep(0)
        done = plain.done()
        plain.cancel()
        return done

    assert asyncio.run(main()) is False


@pytest.mark.realprocess
def test_the_reference_runtime_returns_inner_after_tock(tmp_path: Path) -> None:
    path = tmp_path / "group.toml"
    path.write_text(_group())
    # tick and inner may each wait 60 s; the run ends long before (timeout
    # 50 s) only because inner's start ends tick's wait and tock's return
    # inner's.
    subprocess.run([sys.executable, "-m", "faultlab.runtime", str(path), "--session-dir",
                    str(tmp_path / "s"), "--ledger", str(tmp_path / "world.jsonl"), "--quiet"],
                   check=True, timeout=50)  # fmt: skip
    (log,) = (tmp_path / "s").glob("*.jsonl")
    events = [e for line in log.read_bytes().splitlines() if "data" in (e := orjson.loads(line))]
    seq = {(e["type"], e["data"].get("callId")): e["seq"] for e in events if "callId" in e["data"]}
    calls = {e["data"]["name"]: e["data"]["callId"] for e in events if e["type"] == "tool/call"}
    # the nested call was logged (durable) before tock's call, and answered after it
    assert seq[("tool/call", calls["inner"])] < seq[("tool/call", calls["tock"])]
    assert seq[("tool/call", calls["tick"])] < seq[("tool/call", calls["tock"])]
    assert seq[("tool/result", calls["inner"])] > seq[("tool/call", calls["tock"])]
