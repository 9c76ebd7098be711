# The SQLite crash states' replay on hand-written strace facts (the
# integration tests replay the real reference run's trace): writes in place
# and past the end, what an fsync makes durable, truncates, a created file
# that was never dir-synced vanishing, links, unknown bytes refused, the
# crash window after flush/written, and the torn cuts (after each unsynced
# write, at a 4 KiB page inside one).
from __future__ import annotations

from typing import Any

import pytest

from faultlab.lab.faults.powerstates import UnsupportedTrace
from faultlab.lab.faults.sqlitestates import MAX_CUTS, _cuts, _Op, crash_window, replay

ROOT = "/w/session"
DB = f"{ROOT}/session.sqlite"
WAL = f"{DB}-wal"


def fact(kind: str, **fields: Any) -> dict[str, Any]:
    return {"fact": kind, **fields, "after": 0, "via": "strace"}


def write(path: str, offset: int, w: int) -> dict[str, Any]:
    return fact("write", file=path, offset=offset, bytes=0, w=w)


def test_a_write_in_place_is_durable_only_after_its_fsync() -> None:
    data = [b"AAAA", b"bb", b"CC"]
    facts = [
        fact("create", file=DB, size=0), fact("dirsync", dir=ROOT),
        write(DB, 0, 0), fact("fsync", file=DB, size=4),
        write(DB, 1, 1),  # overwrites in place: the final file is not an append
        write(DB, 6, 2),  # past the end: the gap reads as zeros
    ]  # fmt: skip
    replayed = replay(facts, data)
    assert bytes(replayed.files[DB].current) == b"AbbA\x00\x00CC"
    assert replayed.durable() == {DB: b"AAAA"}
    assert [(op.offset, op.data) for op in replayed.pending] == [(1, b"bb"), (6, b"CC")]
    replayed = replay([*facts, fact("fsync", file=DB, size=8)], data)
    assert replayed.durable() == {DB: b"AbbA\x00\x00CC"} and replayed.pending == []


def test_a_file_never_dir_synced_vanishes_and_a_failed_fsync_makes_nothing_durable() -> None:
    facts = [
        fact("create", file=DB, size=0), fact("dirsync", dir=ROOT), write(DB, 0, 0),
        fact("fsync-failed", file=DB, size=3),
        fact("create", file=WAL, size=0), write(WAL, 0, 0), fact("fsync", file=WAL, size=3),
    ]  # fmt: skip
    replayed = replay(facts, [b"abc"])
    assert replayed.durable() == {DB: b""}  # the WAL's entry was never made durable
    assert [op.path for op in replayed.pending] == [DB]
    replayed = replay([*facts, fact("dirsync", dir=ROOT)], [b"abc"])
    assert replayed.durable() == {DB: b"", WAL: b"abc"}


def test_truncate_link_and_unlink_follow_the_bytes() -> None:
    temp = f"{ROOT}/.tmp"
    facts = [
        fact("create", file=temp, size=0), write(temp, 0, 0), fact("fsync", file=temp, size=6),
        fact("truncate", file=temp, size=2),
        fact("link", file=DB, source=temp), fact("unlink", file=temp),
        fact("dirsync", dir=ROOT),
    ]  # fmt: skip
    replayed = replay(facts, [b"abcdef"])
    assert set(replayed.files) == {DB}
    assert bytes(replayed.files[DB].current) == b"ab"
    # the truncate was never fsynced: a power loss may find the longer file
    assert replayed.durable() == {DB: b"abcdef"}
    assert [(op.path, op.offset, op.data) for op in replayed.pending] == [(DB, 2, None)]


def test_bytes_the_trace_did_not_keep_or_a_file_it_never_created_are_refused() -> None:
    with pytest.raises(UnsupportedTrace, match="kept no bytes of a 9-byte write"):
        replay([fact("create", file=DB, size=0),
                fact("write", file=DB, offset=0, bytes=9, w=None)], [])  # fmt: skip
    with pytest.raises(UnsupportedTrace, match="did not create"):
        replay([write(DB, 0, 0)], [b"x"])


def test_the_crash_window_is_the_commits_writes_before_its_fsync() -> None:
    trace = [
        {"boundary": "flush/written", "n": 1},
        write(WAL, 0, 0), write(WAL, 24, 1), fact("fsync", file=WAL, size=4120),
        write(WAL, 4120, 2),
    ]  # fmt: skip
    prefix, window = crash_window(trace, "flush/written#1")
    assert prefix == ({"boundary": "flush/written", "n": 1, "parked": True},)
    assert window == trace[1:3]
    # a probe report ends the window too (the next boundary is another case)
    prefix, window = crash_window([trace[0], {"fact": "commit"}, *trace[1:]], "flush/written#1")
    assert window == []


def test_torn_cuts_after_each_write_and_at_a_page_inside_one() -> None:
    pending = [_Op(WAL, 4096 - 24, b"h" * 24), _Op(WAL, 4096, b"p" * 4096),
               _Op(WAL, 8180, b"q" * 100)]  # fmt: skip
    assert _cuts(pending) == [
        ("torn@write1/3", 1, None),  # ends at a page boundary: none inside
        ("torn@write2/3", 2, None),  # starts at one: none strictly inside either
        ("torn@write3/3", 3, None),
        ("torn@write3/3+8192 (page)", 2, 12),
    ]
    many = [_Op(WAL, i, b"x") for i in range(100)]
    wholes = [whole for _label, whole, _part in _cuts(many)]
    assert len(wholes) == MAX_CUTS and wholes[0] == 1 and wholes[-1] == 100
