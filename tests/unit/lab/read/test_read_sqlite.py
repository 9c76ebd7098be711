# The lab's own SQLite reader: it reads what the runtime's backend committed
# (and nothing uncommitted), reports damage by row (gaps, duplicates, bad
# rows, bad headers) instead of skipping it, never changes the files it
# reads, and `read_any` tells the two formats apart by content.
from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from faultlab.lab.errors import LabUsageError
from faultlab.lab.read.sqlite import parse_sqlite, read_sqlite_file, render_jsonl, snapshot
from faultlab.lab.read.stores import find_log, read_any, store_for
from faultlab.lab.read.view import BAD_HEADER, CORRUPT_COMMITTED_LOG, SEQ_DUPLICATE, SEQ_GAP
from faultlab.runtime.backends import JsonlBackend
from faultlab.runtime.backends.sqlite import SqliteBackend
from faultlab.runtime.events import Event


def batch(start: int, n: int) -> list[Event]:
    return [Event(i, "turn/start", 2.5, {"turn": i, "t": "ü"}) for i in range(start, start + n)]


def live(directory: Path, n: int) -> SqliteBackend:
    backend = SqliteBackend(directory)
    backend.open(session_id="lab", create=True, resume=False)
    backend.append_batch(batch(0, n))
    backend.sync()
    return backend


def test_reads_what_was_committed_and_not_the_open_transaction(tmp_path: Path) -> None:
    backend = live(tmp_path / "s", 3)
    backend.append_batch(batch(3, 2))  # uncommitted: a crash here loses it
    path = tmp_path / "s" / "session.sqlite"
    files = {p.name: p.read_bytes() for p in (tmp_path / "s").iterdir()}
    view = read_sqlite_file(path)
    assert view.header is not None and view.header["id"] == "lab" and view.problems == ()
    assert [(e.seq, e.type, e.data) for e in view.events] == [
        (e.seq, e.type, e.data) for e in batch(0, 3)
    ]
    assert {p.name: p.read_bytes() for p in (tmp_path / "s").iterdir()} == files  # untouched
    backend.sync()
    assert len(read_sqlite_file(path).events) == 5
    backend.close()
    dump = render_jsonl(read_sqlite_file(path))
    assert read_any(path).events == read_sqlite_file(path).events
    assert dump.count(b"\n") == 6 and dump.startswith(b'{"type":"session"')


def _tampered(tmp_path: Path, *sql: str) -> bytes:
    live(tmp_path / "s", 5).close()
    path = tmp_path / "s" / "session.sqlite"
    db = sqlite3.connect(path)
    for statement in sql:
        db.execute(statement)
    db.commit()
    db.close()
    return snapshot(path)


@pytest.mark.parametrize(
    ("sql", "code", "needle"),
    [
        (["DELETE FROM events WHERE seq = 2"], SEQ_GAP, "seq 3 where 2"),
        (["UPDATE events SET data = 'nope' WHERE seq = 4"], CORRUPT_COMMITTED_LOG, "not JSON"),
        (["UPDATE events SET type = 'x/y' WHERE seq = 1"], CORRUPT_COMMITTED_LOG, "'type'"),
        (["UPDATE events SET data = '[1]' WHERE seq = 0"], CORRUPT_COMMITTED_LOG, "'data'"),
        (["DELETE FROM header"], BAD_HEADER, "0 rows"),
        (["UPDATE header SET format = 7"], BAD_HEADER, "'format' is 7"),
        (["DROP TABLE events"], BAD_HEADER, "no 'events' table"),
    ],
)
def test_damage_is_reported_by_row(tmp_path: Path, sql: list[str], code: str, needle: str) -> None:
    view = parse_sqlite(_tampered(tmp_path, *sql), "s.sqlite")
    assert [p.code for p in view.problems] == [code], view.problems
    assert needle in view.problems[0].message


def test_a_duplicate_seq_in_a_table_without_the_primary_key_is_found(tmp_path: Path) -> None:
    data = _tampered(
        tmp_path,
        "CREATE TABLE e2 (seq INTEGER, type TEXT, time REAL, data TEXT)",
        "INSERT INTO e2 SELECT * FROM events ORDER BY seq",
        "INSERT INTO e2 SELECT * FROM events WHERE seq = 4",
        "DROP TABLE events",
        "ALTER TABLE e2 RENAME TO events",
    )
    view = parse_sqlite(data, "s.sqlite")
    assert [p.code for p in view.problems] == [SEQ_DUPLICATE]


def test_missing_garbage_and_directories(tmp_path: Path) -> None:
    assert not read_sqlite_file(tmp_path / "none.sqlite").exists
    garbage = tmp_path / "g.sqlite"
    garbage.write_bytes(b"SQLite format 3\x00" + b"\xff" * 5000)
    assert [p.code for p in read_sqlite_file(garbage).problems] == [BAD_HEADER]
    assert [p.code for p in parse_sqlite(b"hello", "x").problems] == [BAD_HEADER]
    assert [p.code for p in read_sqlite_file(tmp_path).problems] == [BAD_HEADER]


def test_stores_find_the_log_of_either_backend(tmp_path: Path) -> None:
    live(tmp_path / "a", 1).close()
    jsonl = JsonlBackend(tmp_path / "b")
    jsonl.open(session_id="j", create=True, resume=False)
    jsonl.close()
    assert find_log(tmp_path / "a").name == "session.sqlite"
    assert find_log(tmp_path / "b").name == "session.jsonl"
    assert read_any(tmp_path / "b" / "session.jsonl").session_id == "j"
    with pytest.raises(LabUsageError, match="no session log"):
        find_log(tmp_path)
    with pytest.raises(LabUsageError, match="unknown backend 'nope'"):
        store_for("nope")
    store = store_for("sqlite")
    # power-loss and torn-write run from the system-call trace only
    assert set(store.unsupported) == {"corrupt-committed"}
    assert set(store.needs_trace) == {"power-loss", "torn-write"}
    assert store.unsupported_reason("power-loss", "syscalls") is None
    assert "system-call" in str(store.unsupported_reason("power-loss", "facts"))
    assert store.unsupported_reason("corrupt-committed", "syscalls") is not None
    assert store_for("jsonl").unsupported == {}
    assert store_for("jsonl").unsupported_reason("power-loss", "facts") is None
