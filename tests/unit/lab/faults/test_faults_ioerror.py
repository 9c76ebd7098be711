# The io-error family's pure parts (faultlab/lab/faults/ioerror.py and the
# fsync-failed rule of powerstates.py) on synthetic traces: after a failed
# fsync no later fsync makes the bytes written since the last good one
# durable, until they are cut off; the lab adds the failed fsync it armed when
# the target does not report it; and a case is planned only where a flush
# follows.  No process is started (tests/integration/test_fsync_faults.py
# runs the real ones).
from __future__ import annotations

from typing import Any

from faultlab.lab.faults.ioerror import IO_FAULTS, flush_follows, with_failed_fsync
from faultlab.lab.faults.powerstates import file_states
from faultlab.probe import FAULTS

LOG = "/s/session.jsonl"


def _write(offset: int, count: int) -> dict[str, Any]:
    return {"fact": "write", "file": LOG, "offset": offset, "bytes": count}


def _fsync(size: int) -> dict[str, Any]:
    return {"fact": "fsync", "file": LOG, "size": size}


def _failed(size: int) -> dict[str, Any]:
    return {"fact": "fsync-failed", "file": LOG, "size": size, "error": "EIO"}


def _truncate(size: int) -> dict[str, Any]:
    return {"fact": "truncate", "file": LOG, "size": size}


def test_a_later_fsync_does_not_make_bytes_durable_after_a_failed_one() -> None:
    trace = [_write(0, 100), _fsync(100), _write(100, 50), _failed(150), _fsync(150)]
    state = file_states(trace)[LOG]
    assert (state.written, state.synced, state.poisoned) == (150, 100, 100)
    # nor do bytes appended after them: the log is durable only as a prefix
    state = file_states([*trace, _write(150, 30), _fsync(180)])[LOG]
    assert (state.written, state.synced) == (180, 100)


def test_without_the_failed_fsync_the_same_fsync_makes_everything_durable() -> None:
    state = file_states([_write(0, 100), _fsync(100), _write(100, 50), _fsync(150)])[LOG]
    assert (state.synced, state.poisoned) == (150, None)


def test_cutting_the_lost_bytes_off_and_writing_them_again_is_durable() -> None:
    trace = [_write(0, 100), _fsync(100), _write(100, 50), _failed(150), _truncate(100)]
    assert file_states(trace)[LOG].poisoned is None
    state = file_states([*trace, _write(100, 50), _fsync(150)])[LOG]
    assert (state.written, state.synced) == (150, 150)


def test_a_truncate_that_keeps_lost_bytes_keeps_them_lost() -> None:
    trace = [_write(0, 100), _fsync(100), _write(100, 50), _failed(150), _truncate(120)]
    state = file_states([*trace, _fsync(120)])[LOG]
    assert (state.synced, state.poisoned) == (100, 100)


def test_the_lab_adds_the_failed_fsync_it_armed_before_the_next_fsync() -> None:
    parked = {"boundary": "request/logged", "n": 1, "parked": True}
    trace = (_write(0, 100), _fsync(100), parked, _write(100, 50),
             {"boundary": "flush/written", "n": 2}, _fsync(150))  # fmt: skip
    added = with_failed_fsync(trace)
    assert added[5] == {"fact": "fsync-failed", "file": LOG, "lab": True, "size": 150}
    assert added[6] == _fsync(150)
    assert file_states(added)[LOG].synced == 100


def test_the_lab_adds_nothing_when_the_target_reported_the_failure() -> None:
    parked = {"boundary": "request/logged", "n": 1, "parked": True}
    trace = (parked, _write(100, 50), _failed(150), _truncate(100))
    assert with_failed_fsync(trace) == trace


def test_the_lab_adds_the_failed_fsync_before_a_rollback() -> None:
    # A target that cuts its bytes off after the failure but does not say why.
    parked = {"boundary": "tool/logged", "n": 1, "parked": True}
    trace = (_write(0, 100), _fsync(100), parked, _write(100, 50), _truncate(100),
             _write(100, 50), _fsync(150))  # fmt: skip
    added = with_failed_fsync(trace)
    assert [m.get("fact") for m in added[3:]] == [
        "write", "fsync-failed", "truncate", "write", "fsync",
    ]  # fmt: skip
    assert file_states(added)[LOG].synced == 150


def test_an_io_case_needs_a_flush_after_the_armed_point() -> None:
    flush = {"fact": "flush", "ok": True, "first": 1, "last": 1}
    turn = {"boundary": "turn/logged", "n": 1}
    trace = [_write(0, 10), _fsync(10), flush, turn, {"boundary": "turn/durable", "n": 1}]
    for fault in IO_FAULTS.values():
        assert flush_follows(trace, 0, fault)
        assert not flush_follows(trace, 3, fault)  # every-event's last turn/logged


def test_a_target_without_flush_facts_keeps_every_case() -> None:
    trace = [{"boundary": "turn/logged", "n": 1}]
    assert all(flush_follows(trace, 0, fault) for fault in IO_FAULTS.values())


def test_write_and_fsync_failures_are_separate_faults() -> None:
    assert {(f.op, f.errno) for f in IO_FAULTS.values()} == {
        ("write", "EIO"), ("write", "ENOSPC"), ("sync", "EIO"), ("sync", "ENOSPC"),
    }  # fmt: skip
    assert IO_FAULTS["io-error"].op == "write"
    assert IO_FAULTS["io-error"].errno == "EIO"  # its case ids stay what they were
    assert set(IO_FAULTS) <= set(FAULTS)
