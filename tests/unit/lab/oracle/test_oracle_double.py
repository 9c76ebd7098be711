# `faultlab.lab.oracle.double` on hand-made logs: the checks that only a
# crash during recovery has (each log of the chain extends the one before it;
# the killed resume's own trace against the log it left) pass on a
# consistent chain and fail, with their code and crash, on a broken one.
from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from faultlab.lab.oracle.case import Case
from faultlab.lab.oracle.checks import Observation
from faultlab.lab.oracle.double import FirstCrash, check_double
from faultlab.lab.process.spawn import ChildExit
from faultlab.lab.read.jsonl import parse_log
from faultlab.lab.read.view import LogView
from faultlab.scenario import load_scenario

SCENARIO = Path(__file__).resolve().parents[4] / "scenarios" / "chat.toml"
OK = ChildExit(0, "")
HEADER = {"type": "session", "format": 1, "id": "s", "createdAt": 0}


def log(*events: tuple[str, dict[str, Any]]) -> LogView:
    lines = [orjson.dumps(HEADER)]
    lines += [
        orjson.dumps({"seq": seq, "type": kind, "time": 0, "data": data})
        for seq, (kind, data) in enumerate(events)
    ]
    return parse_log(b"\n".join(lines) + b"\n", "session.jsonl")


def turn(n: int, text: str, reason: str) -> list[tuple[str, dict[str, Any]]]:
    message = {"role": "user", "content": [{"type": "text", "text": text}]}
    return [
        ("turn/start", {"turn": n}),
        ("user/message", {"turn": n, "message": message}),
        ("step/start", {"turn": n, "step": 0}),
        ("step/end", {"turn": n, "step": 0}),
        ("turn/end", {"turn": n, "reason": {"kind": reason}}),
    ]


FIRST = turn(0, "hello", "interrupted")
CRASHED1 = log(*FIRST[:3])
REPAIRED1 = log(*FIRST)


def observe(crashed: LogView, trace: tuple[dict[str, Any], ...] = ()) -> Observation:
    return Observation(
        scenario=load_scenario(SCENARIO), case=Case(str(SCENARIO), "x#1+y#1", "double-sigkill"),
        reference_log=log(*turn(0, "hello", "completed")), reference_ledger=(), trace=trace,
        crashed=crashed, repaired=crashed, repair_status=OK, final=crashed, resume_status=OK,
        final_ledger=(),
    )  # fmt: skip


def first() -> FirstCrash:
    return FirstCrash(trace=(), crashed=CRASHED1, repaired=REPAIRED1, repair_status=OK)


def test_a_consistent_chain_of_logs_passes() -> None:
    resumed = log(*FIRST, *turn(1, "go on", "interrupted"))
    assert check_double(first(), observe(resumed)) == []


def test_a_resume_that_rewrote_the_first_repair_is_not_a_prefix() -> None:
    rewritten = log(*turn(0, "hello, again", "interrupted"), *turn(1, "go on", "interrupted"))
    found = check_double(first(), observe(rewritten))
    assert [v.code for v in found] == ["LOG_NOT_PREFIX"], found
    assert found[0].evidence == {"log": "log the killed resume left", "seq": 1}


def test_a_flush_the_killed_resume_reported_must_be_in_its_log() -> None:
    # The resume reported a flush through seq 9 but its log ends at seq 4.
    trace = ({"fact": "flush", "ok": True, "last": 9},)
    found = check_double(first(), observe(REPAIRED1, trace))
    assert [(v.code, v.evidence["crash"]) for v in found] == [
        ("SETTLED_STEP_LOST", "second crash")
    ], found


def test_a_failed_first_repair_is_resume_failed() -> None:
    failed = FirstCrash(trace=(), crashed=CRASHED1, repaired=CRASHED1,
                        repair_status=ChildExit(1, "boom"))  # fmt: skip
    assert [v.code for v in check_double(failed, None)] == ["RESUME_FAILED"]


def test_a_repair_killed_part_way_must_extend_the_first_crash_log() -> None:
    # The ACP drive's second kill inside session/load: no first repaired log;
    # what the killed repair left must still start with the first crash's log.
    cut_short = FirstCrash(trace=(), crashed=CRASHED1, repaired=None, repair_status=OK)
    assert check_double(cut_short, observe(log(*FIRST))) == []
    rewritten = log(*turn(0, "hello, again", "interrupted"))
    found = check_double(cut_short, observe(rewritten))
    assert [(v.code, v.evidence["log"]) for v in found] == [
        ("LOG_NOT_PREFIX", "log the killed repair left")
    ], found
