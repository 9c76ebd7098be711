# Power-loss and torn-write crash states derived offline from synthetic traces
# and log bytes (faultlab/lab/faults/powerloss.py): each file cut back to its last
# fsync, a new file whose directory was never fsynced vanishes, torn states cut
# mid-line, on line boundaries and at 4 KiB pages; the offline check of G1, G2,
# G4, G5 and G7; planning; FAULT_UNSUPPORTED.  No process is started.
from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
import pytest

from faultlab.lab.errors import LabUsageError
from faultlab.lab.faults.powerloss import (
    MAX_LINES,
    PAGE,
    UnsupportedTrace,
    _ledger_at,
    check_state,
    derive_states,
    file_states,
    plan_power_cases,
    representative,
    run_power_case,
    states_at,
    unsupported,
)
from faultlab.lab.oracle.case import Case
from faultlab.lab.oracle.codes import GUARANTEES
from faultlab.lab.process.reference import LabOptions, Reference
from faultlab.lab.process.target import reference_target
from faultlab.lab.read.jsonl import parse_log
from faultlab.scenario import parse_scenario

DIR = "/s"
LOG = f"{DIR}/session.jsonl"
HEADER = b'{"type":"session","format":1,"id":"s","createdAt":1.5}\n'
SCENARIO = parse_scenario(
    'format = 1\nname = "t"\n[tools.charge]\neffect = "ledger"\n'
    '[[turns]]\nuser = "pay"\n  [[turns.steps]]\n  text = "paid"\n',
    path="<t>",
)


def line(seq: int, kind: str, **data: Any) -> bytes:
    return orjson.dumps({"seq": seq, "type": kind, "time": 1.5, "data": data}) + b"\n"


class Run:
    """A log and the probe trace that wrote it, built together."""

    def __init__(self, *, dirsync: bool = True, fsync: bool = True) -> None:
        self.data = HEADER
        self.fsync = fsync
        self.trace: list[dict[str, Any]] = [{"fact": "create", "file": LOG, "size": len(HEADER)}]
        if dirsync:
            self.trace.append({"fact": "dirsync", "dir": DIR})
        self.seq = 0
        self.flushes = 0

    def event(self, kind: str, **data: Any) -> bytes:
        encoded = line(self.seq, kind, **data)
        self.seq += 1
        return encoded

    def boundary(self, name: str, **facts: Any) -> None:
        n = sum(1 for m in self.trace if m.get("boundary") == name) + 1
        self.trace.append({"boundary": name, "n": n, **facts})

    def flush(self, *lines: bytes) -> None:
        first = self.seq - len(lines)
        payload = b"".join(lines)
        self.trace.append(
            {"fact": "write", "file": LOG, "offset": len(self.data), "bytes": len(payload)}
        )
        self.data += payload
        self.boundary("flush/written", file=LOG, size=len(self.data))
        if self.fsync:
            self.trace.append({"fact": "fsync", "file": LOG, "size": len(self.data)})
        self.trace.append({"fact": "flush", "ok": True, "first": first, "last": self.seq - 1})

    def turn(self) -> None:
        """One turn with a request checkpoint, a tool call and a post-step flush."""
        self.boundary("turn/started", turn=0)
        self.flush(
            self.event("turn/start", turn=0),
            self.event("user/message", turn=0, message="pay"),
            self.event("step/start", turn=0, step=0),
            self.event("request/header", turn=0, step=0, requestId="r0", envelope={"digest": "d0"}),
        )
        self.boundary("request/durable", requestId="r0", digest="d0")
        call = {"type": "tool-call", "id": "c0", "name": "charge", "arguments": {}}
        message = {"role": "assistant", "content": [{"type": "text", "text": "x"}, call]}
        self.flush(
            self.event("assistant/message", turn=0, step=0, message=message),
            self.event("tool/call", turn=0, step=0, callId="c0", name="charge", arguments={}),
        )
        self.boundary("tool/durable", callId="c0", parentCallId=None)
        self.boundary("tool/effect", callId="c0", tool="charge", applied=True)
        self.flush(
            self.event("tool/result", turn=0, step=0, callId="c0", content="ok", isError=False),
            self.event("step/end", turn=0, step=0),
            self.event("turn/end", turn=0, reason={"kind": "completed"}),
        )

    def reference(self, ledger: tuple[dict[str, Any], ...] = ()) -> Reference:
        return Reference(
            scenario=SCENARIO,
            scenario_path="/x/t.toml",
            trace=tuple(self.trace),
            log=parse_log(self.data, LOG),
            ledger=ledger,
            returncode=0,
            log_bytes=self.data,
            stderr="",
        )


def written_at(run: Run, k: int) -> int:
    return next(
        m["size"] for m in run.trace if m.get("boundary") == "flush/written" and m["n"] == k
    )


# -- the file rules ----------------------------------------------------------


def test_power_loss_cuts_the_log_back_to_its_last_fsync() -> None:
    run = Run()
    run.turn()
    ref = run.reference()
    (state,) = derive_states(ref, "flush/written#2", "power-loss")
    assert state.label == "synced"
    assert state.log == run.data[: written_at(run, 1)]
    assert (state.synced, state.written) == (written_at(run, 1), written_at(run, 2))
    assert state.trace[-1] == {
        "boundary": "flush/written", "n": 2, "file": LOG, "size": written_at(run, 2),
        "parked": True,
    }  # fmt: skip
    assert not any(m.get("fact") == "fsync" and m["size"] > written_at(run, 1) for m in state.trace)


def test_at_the_first_flush_only_the_header_is_durable() -> None:
    run = Run()
    run.turn()
    (state,) = derive_states(run.reference(), "flush/written#1", "power-loss")
    assert state.log == HEADER


def test_a_new_file_whose_directory_was_never_fsynced_vanishes() -> None:
    run = Run(dirsync=False)
    run.turn()
    for fault in ("power-loss", "torn-write"):
        (state,) = derive_states(run.reference(), "flush/written#2", fault)
        assert state.label == "vanished" and state.log is None and state.vanished
        assert not state.view(LOG).exists and state.view(LOG).events == ()


def test_an_fsync_of_the_file_does_not_make_its_directory_entry_durable() -> None:
    files = file_states(
        [
            {"fact": "create", "file": LOG, "size": 10},
            {"fact": "write", "file": LOG, "offset": 10, "bytes": 5},
            {"fact": "fsync", "file": LOG, "size": 15},
            {"fact": "dirsync", "dir": "/elsewhere"},
        ]
    )
    assert files[LOG].synced == 15 and files[LOG].durable is None


def test_a_dirsync_of_its_directory_keeps_the_new_file() -> None:
    files = file_states(
        [
            {"fact": "create", "file": "rel/session.jsonl", "size": 10},
            {"fact": "dirsync", "dir": "rel/"},
            {"fact": "write", "file": "rel/session.jsonl", "offset": 10, "bytes": 5},
        ]
    )
    state = files["rel/session.jsonl"]
    assert (state.durable, state.written, state.created) == (10, 15, True)


def test_a_file_first_seen_in_a_write_existed_durably_up_to_that_offset() -> None:
    files = file_states([{"fact": "write", "file": LOG, "offset": 300, "bytes": 50}])
    assert (files[LOG].durable, files[LOG].written) == (300, 350)


def test_truncate_and_cut_shorten_the_file_never_lengthen_what_is_durable() -> None:
    files = file_states(
        [
            {"fact": "write", "file": LOG, "offset": 100, "bytes": 50},
            {"fact": "truncate", "file": LOG, "size": 100},
        ]
    )
    assert (files[LOG].synced, files[LOG].written) == (100, 100)
    files = file_states(
        [
            {"fact": "fsync", "file": LOG, "size": 200},
            {"fact": "cut", "file": LOG, "size": 150, "keptIn": LOG + ".cut-150"},
        ]
    )
    assert (files[LOG].synced, files[LOG].written) == (150, 150)


def test_a_target_that_never_fsyncs_keeps_only_what_its_creation_made_durable() -> None:
    run = Run(fsync=False)
    run.turn()
    (state,) = derive_states(run.reference(), "flush/written#3", "power-loss")
    assert state.log == HEADER


# -- torn states ---------------------------------------------------------------


def test_torn_states_cut_mid_line_and_on_line_boundaries_of_the_unsynced_bytes() -> None:
    run = Run()
    run.turn()
    low, high = written_at(run, 2), written_at(run, 3)
    states = derive_states(run.reference(), "flush/written#3", "torn-write")
    ends = [low + 1 + i for i in range(high - low) if run.data[low + i : low + i + 1] == b"\n"]
    assert len(ends) == 3 and ends[-1] == high
    starts = [low, *ends[:-1]]
    mids = [(s + e) // 2 for s, e in zip(starts, ends, strict=True)]
    expected = {m: "mid-line" for m in mids} | {e: "line" for e in ends[:-1]}
    assert [s.label for s in states] == [
        f"torn@{offset} ({expected[offset]})" for offset in sorted(expected)
    ]
    for state in states:
        offset = int(state.label.split("@")[1].split()[0])
        assert state.log == run.data[:offset]
        assert (state.synced, state.written) == (low, high)
        view = state.view(LOG)
        assert not view.problems
        assert view.torn_bytes == (0 if "(line)" in state.label else offset - view.valid_size)
    assert representative(states, "torn-write").label == f"torn@{mids[-1]} (mid-line)"
    assert representative(states, "power-loss") is states[0]


def test_torn_states_also_cut_at_every_page_boundary_inside_the_unsynced_range() -> None:
    run = Run()
    run.flush(run.event("turn/start", turn=0))
    big = [
        run.event("assistant/chunk", turn=0, step=0, index=i, delta="x" * 1500) for i in range(7)
    ]
    run.flush(*big)
    low, high = written_at(run, 1), written_at(run, 2)
    assert high > 2 * PAGE
    states = derive_states(run.reference(), "flush/written#2", "torn-write")
    pages = [s for s in states if "page" in s.label]
    assert [s.label.split()[0] for s in pages] == [
        f"torn@{p}" for p in range(PAGE, high, PAGE) if p > low
    ]
    assert all(s.log is not None and len(s.log) % PAGE == 0 for s in pages)
    offsets = [len(s.log or b"") for s in states]
    assert offsets == sorted(set(offsets)) and low < offsets[0] and offsets[-1] < high


def test_a_cut_that_is_both_a_line_end_and_a_page_is_one_state() -> None:
    run = Run()
    filler = PAGE - len(HEADER) - len(line(0, "turn/start", turn=0, pad=""))
    run.flush(run.event("turn/start", turn=0, pad="p" * filler), run.event("step/start", step=0))
    assert run.data[PAGE - 1 : PAGE] == b"\n"
    labels = [s.label for s in derive_states(run.reference(), "flush/written#1", "torn-write")]
    assert f"torn@{PAGE} (line, page)" in labels
    assert len(labels) == len(set(labels))


def test_a_batch_of_very_many_lines_is_sampled() -> None:
    run = Run()
    run.flush(*[run.event("turn/start", turn=i) for i in range(10 * MAX_LINES)])
    states = derive_states(run.reference(), "flush/written#1", "torn-write")
    assert len([s for s in states if "mid-line" in s.label]) == MAX_LINES
    first_line_end = len(HEADER) + len(line(0, "turn/start", turn=0))
    assert f"torn@{first_line_end} (line)" in [s.label for s in states]


def test_nothing_unsynced_leaves_only_the_synced_state() -> None:
    prefix = [
        {"fact": "write", "file": LOG, "offset": 10, "bytes": 0},
        {"fact": "fsync", "file": LOG, "size": 10},
        {"boundary": "flush/written", "n": 1, "file": LOG, "size": 10, "parked": True},
    ]
    (state,) = states_at(prefix, b"x" * 10, "torn-write")
    assert state.label == "synced" and state.log == b"x" * 10


def test_a_trace_that_wrote_more_than_the_log_holds_is_refused() -> None:
    prefix = [
        {"fact": "write", "file": LOG, "offset": 10, "bytes": 90},
        {"boundary": "flush/written", "n": 1, "file": LOG, "size": 100},
    ]
    with pytest.raises(UnsupportedTrace, match="100 bytes were written"):
        states_at(prefix, b"x" * 50, "power-loss")


def test_bad_occurrences_and_faults_are_usage_errors() -> None:
    run = Run()
    run.turn()
    ref = run.reference()
    with pytest.raises(LabUsageError, match="never reached flush/written#9"):
        derive_states(ref, "flush/written#9", "power-loss")
    with pytest.raises(LabUsageError, match="flush/written#n only"):
        derive_states(ref, "tool/durable#1", "power-loss")
    with pytest.raises(LabUsageError, match="not one of"):
        derive_states(ref, "flush/written#1", "sigkill")
    with pytest.raises(LabUsageError, match="whole number"):
        derive_states(ref, "flush/written#x", "power-loss")


# -- the offline check -------------------------------------------------------------


def test_every_state_of_a_durable_target_passes() -> None:
    run = Run()
    run.turn()
    ref = run.reference()
    for k in (1, 2, 3):
        for fault in ("power-loss", "torn-write"):
            for state in derive_states(ref, f"flush/written#{k}", fault):
                assert check_state(state, ref) == [], state.label


def test_flushes_claimed_ok_but_never_fsynced_are_lost_work() -> None:
    run = Run(fsync=False)
    run.turn()
    ref = run.reference()
    (state,) = derive_states(ref, "flush/written#3", "power-loss")
    found = check_state(state, ref)
    codes = [v.code for v in found]
    assert codes == ["REQUEST_ENVELOPE_LOST", "TOOL_INTENT_LOST", "SETTLED_STEP_LOST"]
    assert all(v.evidence["state"] == "synced" and v.message.startswith("[synced] ") for v in found)
    lost = found[-1].evidence
    assert (lost["flushedThrough"], lost["lastSeq"]) == (5, -1)


def test_a_lost_turn_end_is_a_completed_turn_lost() -> None:
    run = Run(fsync=False)
    run.turn()
    run.flush(run.event("turn/start", turn=1))
    ref = run.reference()
    (state,) = derive_states(ref, "flush/written#4", "power-loss")
    assert "COMPLETED_TURN_LOST" in {v.code for v in check_state(state, ref)}


def test_a_torn_state_of_a_non_fsyncing_target_fails_with_its_label() -> None:
    run = Run(fsync=False)
    run.turn()
    ref = run.reference()
    states = derive_states(ref, "flush/written#2", "torn-write")
    first = check_state(states[0], ref)
    assert {v.code for v in first} == {"REQUEST_ENVELOPE_LOST", "SETTLED_STEP_LOST"}
    assert all(v.evidence["state"] == states[0].label for v in first)


def test_g7_is_checked_on_the_expected_repair_of_the_state() -> None:
    run = Run()
    run.flush(
        run.event("turn/start", turn=0),
        run.event("tool/result", turn=0, step=0, callId="nobody-asked", content="x", isError=False),
    )
    run.flush(run.event("step/start", turn=0, step=0))
    ref = run.reference()
    (state,) = derive_states(ref, "flush/written#2", "power-loss")
    (violation,) = check_state(state, ref)
    assert violation.code == "PROVIDER_INVALID_HISTORY"
    assert violation.evidence["log"] == "expected-repair"


def test_a_state_that_is_not_a_prefix_of_the_reference_is_reported() -> None:
    run = Run()
    run.turn()
    ref = run.reference()
    (state,) = derive_states(ref, "flush/written#3", "power-loss")
    other = Run()
    other.flush(other.event("turn/start", turn=7))
    shifted = replace(ref, log=other.reference().log)
    assert "LOG_NOT_PREFIX" in {v.code for v in check_state(state, shifted)}


# -- the world ledger, planning, unsupported targets ---------------------------------


def test_the_world_keeps_the_effects_applied_before_the_crash_point() -> None:
    run = Run()
    run.turn()
    ledger = ({"callId": "c0", "tool": "charge", "arguments": {}, "key": None},)
    ref = run.reference(ledger)
    (before,) = derive_states(ref, "flush/written#2", "power-loss")
    (after,) = derive_states(ref, "flush/written#3", "power-loss")
    assert _ledger_at(ref, before.trace) == []
    assert _ledger_at(ref, after.trace) == list(ledger)


def test_one_case_per_flush_written_occurrence() -> None:
    run = Run()
    run.turn()
    cases = plan_power_cases(run.reference(), "torn-write")
    assert [c.occurrence for c in cases] == [f"flush/written#{k}" for k in (1, 2, 3)]
    assert {c.fault for c in cases} == {"torn-write"}
    assert cases[0].id == "t.toml::flush/written#1[torn-write]"


def test_a_target_without_write_facts_gets_one_unsupported_case(tmp_path: Path) -> None:
    run = Run()
    run.turn()
    run.trace = [m for m in run.trace if m.get("fact") not in ("write", "fsync")]
    ref = run.reference()
    assert unsupported(ref.trace) is not None
    (case,) = plan_power_cases(ref, "power-loss")
    result = run_power_case(case, ref, LabOptions(reference_target(), tmp_path))
    assert result.verdict == "error" and result.codes == ("FAULT_UNSUPPORTED",)
    assert "no write facts" in result.violations[0].message
    assert GUARANTEES["FAULT_UNSUPPORTED"][0] == "lab"
    assert not (tmp_path / "cases").exists()  # no process was started


def test_a_target_that_never_reaches_flush_written_is_unsupported(tmp_path: Path) -> None:
    run = Run()
    run.turn()
    run.trace = [m for m in run.trace if m.get("boundary") != "flush/written"]
    ref = run.reference()
    (case,) = plan_power_cases(ref, "torn-write")
    result = run_power_case(case, ref, LabOptions(reference_target(), tmp_path))
    assert result.verdict == "error" and result.codes == ("FAULT_UNSUPPORTED",)
    assert "never reaches flush/written" in result.violations[0].message


def test_an_occurrence_the_reference_never_reached_drifts(tmp_path: Path) -> None:
    run = Run()
    run.turn()
    ref = run.reference()
    case = Case(ref.scenario_path, "flush/written#9", "power-loss")
    result = run_power_case(case, ref, LabOptions(reference_target(), tmp_path))
    assert result.verdict == "drift" and result.codes == ("DRIFT",)
