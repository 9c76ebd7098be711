# What only the SQLite backend has: its pragmas (WAL, synchronous=FULL), one
# transaction per flush, damage reported by row, a directory holding the
# other backend's session refused, and the runtime's --backend flag.
from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from faultlab.runtime.backends import SessionCorruptError, SessionExistsError, open_backend
from faultlab.runtime.backends.sqlite import SqliteBackend
from faultlab.runtime.events import Event

REPO = Path(__file__).resolve().parents[3]


def written(directory: Path, n: int) -> SqliteBackend:
    backend = SqliteBackend(directory)
    backend.open(session_id="abc", create=True, resume=False)
    backend.append_batch([Event(i, "turn/start", 1.0, {"turn": i}) for i in range(n)])
    backend.sync()
    return backend


def test_the_database_is_wal_with_full_sync_and_strict_tables(tmp_path: Path) -> None:
    backend = written(tmp_path / "s", 2)
    assert backend._db is not None
    assert backend._db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert backend._db.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    backend.close()
    db = sqlite3.connect(tmp_path / "s" / "session.sqlite")
    tables = dict(db.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'"))
    db.close()
    assert set(tables) == {"header", "events"}
    assert "seq INTEGER PRIMARY KEY" in tables["events"] and "STRICT" in tables["events"]
    assert sorted(p.name for p in (tmp_path / "s").iterdir()) == [
        "session.sqlite",
        "session.sqlite.lock",
    ]  # fmt: skip  (no temp file, the WAL folded in by the clean close)


def test_a_flush_is_one_transaction_invisible_until_sync(tmp_path: Path) -> None:
    backend = written(tmp_path / "s", 1)
    backend.append_batch([Event(1, "user/message", 1.0, {"turn": 0})])
    assert [e.seq for e in backend.load().events] == [0]  # other readers: committed only
    backend.sync()
    assert [e.seq for e in backend.load().events] == [0, 1]
    backend.close()


def _tamper(directory: Path, sql: str) -> None:
    db = sqlite3.connect(directory / "session.sqlite")
    db.execute(sql)
    db.commit()
    db.close()


@pytest.mark.parametrize(
    ("sql", "problem"),
    [
        ("UPDATE events SET data = '{bad' WHERE seq = 1", "row seq 1: data is not JSON"),
        ("DELETE FROM events WHERE seq = 1", "row seq 2: seq gap: seq 2 where 1"),
        ("UPDATE events SET type = 'nope' WHERE seq = 2", "row seq 2: type 'nope'"),
        ("DELETE FROM header", "header: the header table has no row"),
        ("UPDATE header SET format = 2", "header: header field 'format' is 2"),
        ("DROP TABLE events", "no such table: events"),
    ],
)
def test_damage_is_reported_by_row_never_skipped(tmp_path: Path, sql: str, problem: str) -> None:
    written(tmp_path / "s", 4).close()
    _tamper(tmp_path / "s", sql)
    with pytest.raises(SessionCorruptError, match=problem):
        SqliteBackend(tmp_path / "s").load()
    with pytest.raises(SessionCorruptError, match=problem):
        SqliteBackend(tmp_path / "s").open(session_id=None, create=False, resume=True)


def test_a_file_that_is_not_a_database_is_corrupt(tmp_path: Path) -> None:
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "session.sqlite").write_bytes(b"not a database at all" * 100)
    with pytest.raises(SessionCorruptError, match="corrupt session database"):
        SqliteBackend(tmp_path / "s").open(session_id=None, create=False, resume=True)


def test_a_directory_of_the_other_backend_is_refused(tmp_path: Path) -> None:
    written(tmp_path / "s", 1).close()
    with pytest.raises(SessionExistsError, match="holds a sqlite session"):
        open_backend("jsonl", tmp_path / "s")
    with pytest.raises(ValueError, match="unknown backend 'nope'"):
        open_backend("nope", tmp_path / "s")


def test_the_runtime_runs_and_resumes_on_sqlite(tmp_path: Path) -> None:
    def run(*extra: str) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-m", "faultlab.runtime", str(REPO / "scenarios" / "payment.toml"),
                "--session-dir", str(tmp_path / "s"), "--quiet", *extra]  # fmt: skip
        return subprocess.run(argv, capture_output=True, text=True, timeout=60)

    assert run("--backend", "sqlite").returncode == 0
    stored = SqliteBackend(tmp_path / "s").load().events
    assert stored[-1].type == "turn/end" and stored[-1].data["reason"]["kind"] == "completed"
    wrong = run("--resume")  # the scenario says jsonl: a usage error, not a new session
    assert wrong.returncode == 2 and "holds a sqlite session" in wrong.stderr
    assert run("--resume", "--backend", "sqlite").returncode == 0


def test_a_second_runtime_on_a_live_sqlite_session_exits_5(tmp_path: Path) -> None:
    holder = written(tmp_path / "s", 1)  # a live writer holds the session
    argv = [sys.executable, "-m", "faultlab.runtime", str(REPO / "scenarios" / "payment.toml"),
            "--session-dir", str(tmp_path / "s"), "--resume", "--backend", "sqlite"]  # fmt: skip
    second = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert second.returncode == 5, second.stderr  # EXIT_CODES["locked"], as on JSONL
    assert "locked by another live writer" in second.stderr and "Traceback" not in second.stderr
    assert [e.seq for e in holder.load().events] == [0]
    holder.close()
