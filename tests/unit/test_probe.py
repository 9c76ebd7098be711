# The child side of the probe protocol, over real pipes in one process.
from __future__ import annotations

import os
import select
import threading

import orjson
import pytest

from faultlab.probe import ENV_ARM, ENV_FDS, PROBE, Probe, ProbeError, parse_occurrence


def test_occurrences_parse_with_an_implied_first() -> None:
    assert parse_occurrence("tool/durable") == ("tool/durable", 1)
    assert parse_occurrence("tool/durable#12") == ("tool/durable", 12)


@pytest.mark.parametrize("text", ["tool/durible", "tool/durable#0", "tool/durable#x", "#2"])
def test_bad_occurrences_are_refused_with_the_reason(text: str) -> None:
    with pytest.raises(ProbeError):
        parse_occurrence(text)


def test_the_global_probe_is_off_without_the_lab() -> None:
    assert PROBE.enabled is False
    assert Probe().attach_from_environ({}) is False


@pytest.mark.parametrize("value", ["3", "a,b", "1,2,3"])
def test_malformed_probe_environment_is_an_error(value: str) -> None:
    with pytest.raises(ProbeError, match=ENV_FDS):
        Probe().attach_from_environ({ENV_FDS: value})


def read_lines(fd: int, count: int) -> list[dict[str, object]]:
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    data = b""
    while data.count(b"\n") < count:
        # A hang guard, not a timing assertion: a report that never comes fails.
        assert poller.poll(10_000), f"only {len(data.splitlines())} of {count} report(s) came"
        data += os.read(fd, 4096)
    return [orjson.loads(line) for line in data.splitlines()]


def test_reports_count_occurrences_and_park_at_the_armed_one() -> None:
    report_r, report_w = os.pipe()
    reply_r, reply_w = os.pipe()
    probe = Probe()
    probe.attach_from_environ({ENV_FDS: f"{report_w},{reply_r}", ENV_ARM: "tool/durable#2"})
    assert probe.enabled
    probe.reach("tool/durable", callId="a")
    probe.fact("fsync", file="f", size=10)
    released = threading.Event()

    def second() -> None:
        probe.reach("tool/durable", callId="b")
        released.set()

    worker = threading.Thread(target=second)
    worker.start()
    lines = read_lines(report_r, 3)
    assert lines == [
        {"boundary": "tool/durable", "n": 1, "callId": "a"},
        {"fact": "fsync", "file": "f", "size": 10},
        {"boundary": "tool/durable", "n": 2, "callId": "b", "parked": True},
    ]
    assert not released.wait(0.05), "the armed occurrence must park until the lab replies"
    os.write(reply_w, b'{"action":"continue"}\n')
    assert released.wait(10)
    worker.join()
    for fd in (report_r, report_w):
        os.close(fd)
    # The reply pipe stays open: at EOF the watcher thread ends the process
    # (that is how a child leaves when its lab dies; see the integration tests).


class Pipes:
    """A probe attached to fresh pipes: the lab's ends of them."""

    def __init__(self, *, armed: tuple[str, int] | None, buffered: bool) -> None:
        self.report, report_w = os.pipe()
        reply_r, self.reply = os.pipe()
        self.probe = Probe()
        self.probe.attach(report_w, reply_r, armed=armed, buffered=buffered)
        # The reply pipe stays open: at EOF the watcher thread ends the process.


def nothing_pending(fd: int) -> bool:
    """Nothing to read on `fd` right now (nothing is consumed)."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return not poller.poll(0)


def test_buffered_reports_reach_the_pipe_in_order_when_the_child_parks() -> None:
    pipes = Pipes(armed=("tool/durable", 1), buffered=True)
    probe, report_r, reply_w = pipes.probe, pipes.report, pipes.reply
    probe.reach("turn/started", turn=1)
    probe.fact("fsync", file="f", size=10)
    assert nothing_pending(report_r), "buffered reports wait for the park, a flush or the limit"
    released = threading.Event()

    def armed() -> None:
        probe.reach("tool/durable", callId="a")
        released.set()

    worker = threading.Thread(target=armed)
    worker.start()
    assert read_lines(report_r, 3) == [
        {"boundary": "turn/started", "n": 1, "turn": 1},
        {"fact": "fsync", "file": "f", "size": 10},
        {"boundary": "tool/durable", "n": 1, "callId": "a", "parked": True},
    ]
    os.write(reply_w, b'{"action":"continue"}\n')
    assert released.wait(10)
    worker.join()
    probe.reach("turn/durable", turn=1)
    assert nothing_pending(report_r)
    probe.flush()
    assert read_lines(report_r, 1) == [{"boundary": "turn/durable", "n": 1, "turn": 1}]


def test_buffered_reports_are_written_once_the_limit_is_pending() -> None:
    pipes = Pipes(armed=None, buffered=True)
    probe, report_r = pipes.probe, pipes.report
    padding = "x" * 1000
    sent = 0
    while nothing_pending(report_r):
        probe.fact("write", file="f", padding=padding)
        sent += 1
        assert sent < 100, "a buffered probe must not hold more than its limit"
    probe.flush()
    assert len(read_lines(report_r, sent)) == sent


def test_unbuffered_reports_are_written_at_once() -> None:
    pipes = Pipes(armed=None, buffered=False)
    pipes.probe.reach("turn/started", turn=1)
    assert read_lines(pipes.report, 1) == [{"boundary": "turn/started", "n": 1, "turn": 1}]
