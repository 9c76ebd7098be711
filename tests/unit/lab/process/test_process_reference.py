# The pure parts of the reference run (faultlab/lab/process/reference.py):
# `drift`, which decides whether a crash child left the fault-free run's way
# (in order within lanes: each top-level call, the flushes, the rest; volatile
# fields and a call's `n` ignored), the occurrences a reference offers, the
# world-ledger reader, `slug`, the option checks and `for_jobs`.  No process.
from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from faultlab.lab.errors import LabUsageError
from faultlab.lab.process.drift import drift
from faultlab.lab.process.reference import (
    LabOptions,
    Reference,
    read_bytes,
    read_ledger,
    slug,
    usable_cpus,
)
from faultlab.lab.process.target import reference_target
from faultlab.lab.read.view import LogView
from faultlab.scenario import load_scenario

SCENARIO_PATH = str(Path(__file__).resolve().parents[4] / "scenarios" / "payment.toml")

RUN: tuple[dict[str, Any], ...] = (
    {"boundary": "turn/started", "n": 1, "turn": 0},
    {"boundary": "request/logged", "n": 1, "seq": 1},
    {"boundary": "flush/written", "n": 1, "file": "/a/session.jsonl", "size": 100},
    {"boundary": "tool/logged", "n": 1, "callId": "c1"},
    {"boundary": "tool/logged", "n": 2, "callId": "c2"},
    {"boundary": "flush/written", "n": 2, "file": "/a/session.jsonl", "size": 180},
    {"boundary": "tool/effect", "n": 1, "callId": "c1"},
    {"boundary": "tool/effect", "n": 2, "callId": "c2"},
    {"fact": "write", "bytes": 80},
    {"boundary": "turn/logged", "n": 1},
)


def reference(trace: tuple[dict[str, Any], ...] = RUN) -> Reference:
    return Reference(
        scenario=load_scenario(SCENARIO_PATH), scenario_path=SCENARIO_PATH, trace=trace,
        log=LogView("-", False, None, (), 0, 0, 0, ()), ledger=(), returncode=0,
        log_bytes=b"", stderr="",
    )  # fmt: skip


def test_the_occurrences_are_the_boundaries_in_trace_order() -> None:
    ref = reference()
    assert ref.occurrences == [
        "turn/started#1", "request/logged#1", "flush/written#1", "tool/logged#1",
        "tool/logged#2", "flush/written#2", "tool/effect#1", "tool/effect#2", "turn/logged#1",
    ]  # fmt: skip
    assert {"fact": "write", "bytes": 80} not in ref.boundaries


def test_the_reference_itself_and_every_prefix_of_it_do_not_drift() -> None:
    for end in range(len(RUN) + 1):
        assert drift(list(RUN[:end]), reference()) is None


def test_volatile_fields_may_differ() -> None:
    crash = [dict(m) for m in RUN]
    crash[2] = {**crash[2], "file": "/b/session.jsonl", "size": 120, "parked": True}
    assert drift(crash, reference()) is None


def test_parallel_calls_may_interleave_and_renumber() -> None:
    # c2's boundaries before c1's: each call's lane is still in order, and a
    # call's `n` (counted over every call) moves with the interleaving.
    crash = [
        RUN[0], RUN[1], RUN[2],
        {"boundary": "tool/logged", "n": 1, "callId": "c2"},
        {"boundary": "tool/logged", "n": 2, "callId": "c1"},
        RUN[5],
        {"boundary": "tool/effect", "n": 1, "callId": "c2"},
        {"boundary": "tool/effect", "n": 2, "callId": "c1"},
    ]  # fmt: skip
    assert drift(crash, reference()) is None


def test_another_value_in_a_lane_is_drift_and_says_where() -> None:
    crash = [RUN[0], {"boundary": "request/logged", "n": 1, "seq": 2}]
    message = drift(crash, reference())
    assert message is not None
    assert message.startswith("boundary 2 of run differs from the reference: ")
    assert "'seq': 2" in message and "'seq': 1" in message


def test_a_call_the_reference_never_made_is_past_its_end() -> None:
    crash = [*RUN[:3], {"boundary": "tool/logged", "n": 3, "callId": "c9"}]
    assert drift(crash, reference()) == "tool/logged#3 is past the reference's end"


def test_a_flush_more_than_the_reference_made_is_drift() -> None:
    crash = [*RUN[:3], {"boundary": "flush/written", "n": 2}, {"boundary": "flush/written", "n": 3}]
    assert drift(crash, reference()) == "flush/written#3 is past the reference's end"


def test_the_ledger_reader_skips_torn_and_foreign_lines(tmp_path: Path) -> None:
    path = tmp_path / "world-ledger.jsonl"
    assert read_ledger(path) == ()
    path.write_bytes(
        b'{"callId": "c1", "tool": "charge"}\n[1, 2]\n\nnot json\n{"callId": "c2", "to'
    )
    assert read_ledger(path) == ({"callId": "c1", "tool": "charge"},)
    assert read_bytes(tmp_path / "absent") == b""


@pytest.mark.parametrize(("text", "expected"), [
    ("payment.toml::tool/logged#1[sigkill]", "payment.toml_tool_logged_1_sigkill"),
    ("a b/c", "a_b_c"),
    ("__x__", "x"),
    ("ok-name_1.2", "ok-name_1.2"),
])  # fmt: skip
def test_a_slug_is_a_file_name(text: str, expected: str) -> None:
    assert slug(text) == expected


def test_options_refuse_bad_values(tmp_path: Path) -> None:
    target = reference_target()
    for fields, problem in [
        ({"spawn": "thread"}, "spawn must be 'fork' or 'exec', not 'thread'"),
        ({"ground_truth": "guess"}, "ground truth must be one of auto, syscalls, facts"),
        ({"fork_ahead": -1}, "fork_ahead must be an integer >= 0, not -1"),
        ({"fork_ahead": True}, "fork_ahead must be an integer >= 0, not True"),
        ({"fork_warm": 1}, "fork_warm must be True, False or None, not 1"),
    ]:
        with pytest.raises(LabUsageError) as caught:
            LabOptions(target, tmp_path, **fields)
        assert str(caught.value).startswith(problem)


def test_forked_children_warm_up_unless_there_are_more_jobs_than_cpus(tmp_path: Path) -> None:
    options = LabOptions(reference_target(), tmp_path)
    cpus = usable_cpus()
    assert cpus == len(os.sched_getaffinity(0))
    assert options.for_jobs(cpus).fork_warm is True
    assert options.for_jobs(cpus + 1).fork_warm is False
    chosen = replace(options, fork_warm=True)
    assert chosen.for_jobs(cpus + 1) is chosen  # a choice made is kept
