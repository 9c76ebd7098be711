# The child side of the probe protocol, over real pipes in one process.
from __future__ import annotations

import os
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
    data = b""
    while data.count(b"\n") < count:
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
