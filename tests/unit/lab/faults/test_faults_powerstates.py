# Power-loss and torn-write crash states derived offline from synthetic traces
# and log bytes (faultlab/lab/faults/powerstates.py): each file cut back to its
# last fsync, a new file whose directory was never fsynced vanishes, torn states
# cut mid-line, on line boundaries and at 4 KiB pages; bad occurrences and
# faults.  No process is started.
from __future__ import annotations

import pytest
from power_runs import HEADER, LOG, Run, line, written_at

from faultlab.lab.errors import LabUsageError
from faultlab.lab.faults.powerstates import (
    MAX_LINES,
    PAGE,
    UnsupportedTrace,
    derive_states,
    file_states,
    representative,
    states_at,
)

# -- the file rules ----------------------------------------------------------


def test_power_loss_cuts_the_log_back_to_its_last_fsync() -> None:
    run = Run()
    run.turn()
    ref = run.reference()
    (state,) = derive_states(ref, "flush/written#2", torn=False)
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
    (state,) = derive_states(run.reference(), "flush/written#1", torn=False)
    assert state.log == HEADER


def test_a_new_file_whose_directory_was_never_fsynced_vanishes() -> None:
    run = Run(dirsync=False)
    run.turn()
    for torn in (False, True):  # power-loss, torn-write
        (state,) = derive_states(run.reference(), "flush/written#2", torn=torn)
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
    (state,) = derive_states(run.reference(), "flush/written#3", torn=False)
    assert state.log == HEADER


# -- torn states ---------------------------------------------------------------


def test_torn_states_cut_mid_line_and_on_line_boundaries_of_the_unsynced_bytes() -> None:
    run = Run()
    run.turn()
    low, high = written_at(run, 2), written_at(run, 3)
    states = derive_states(run.reference(), "flush/written#3", torn=True)
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
    assert representative(states, torn=True).label == f"torn@{mids[-1]} (mid-line)"
    assert representative(states, torn=False) is states[0]


def test_torn_states_also_cut_at_every_page_boundary_inside_the_unsynced_range() -> None:
    run = Run()
    run.flush(run.event("turn/start", turn=0))
    big = [
        run.event("assistant/chunk", turn=0, step=0, index=i, delta="x" * 1500) for i in range(7)
    ]
    run.flush(*big)
    low, high = written_at(run, 1), written_at(run, 2)
    assert high > 2 * PAGE
    states = derive_states(run.reference(), "flush/written#2", torn=True)
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
    labels = [s.label for s in derive_states(run.reference(), "flush/written#1", torn=True)]
    assert f"torn@{PAGE} (line, page)" in labels
    assert len(labels) == len(set(labels))


def test_a_batch_of_very_many_lines_is_sampled() -> None:
    run = Run()
    run.flush(*[run.event("turn/start", turn=i) for i in range(10 * MAX_LINES)])
    states = derive_states(run.reference(), "flush/written#1", torn=True)
    assert len([s for s in states if "mid-line" in s.label]) == MAX_LINES
    first_line_end = len(HEADER) + len(line(0, "turn/start", turn=0))
    assert f"torn@{first_line_end} (line)" in [s.label for s in states]


def test_nothing_unsynced_leaves_only_the_synced_state() -> None:
    prefix = [
        {"fact": "write", "file": LOG, "offset": 10, "bytes": 0},
        {"fact": "fsync", "file": LOG, "size": 10},
        {"boundary": "flush/written", "n": 1, "file": LOG, "size": 10, "parked": True},
    ]
    (state,) = states_at(prefix, b"x" * 10, torn=True)
    assert state.label == "synced" and state.log == b"x" * 10


def test_a_trace_that_wrote_more_than_the_log_holds_is_refused() -> None:
    prefix = [
        {"fact": "write", "file": LOG, "offset": 10, "bytes": 90},
        {"boundary": "flush/written", "n": 1, "file": LOG, "size": 100},
    ]
    with pytest.raises(UnsupportedTrace, match="100 bytes were written"):
        states_at(prefix, b"x" * 50, torn=False)


def test_bad_occurrences_are_usage_errors() -> None:
    run = Run()
    run.turn()
    ref = run.reference()
    with pytest.raises(LabUsageError, match="never reached flush/written#9"):
        derive_states(ref, "flush/written#9", torn=False)
    with pytest.raises(LabUsageError, match="flush/written#n only"):
        derive_states(ref, "tool/durable#1", torn=False)
    with pytest.raises(LabUsageError, match="whole number"):
        derive_states(ref, "flush/written#x", torn=False)

