# Session copies keep an SQLite database's WAL: a real child process writes
# an Agents SDK session in WAL mode and is SIGKILLed before any checkpoint,
# so its rows are only in `-wal`; the copy (with its sidecars under matching
# names) reads them all, where a copy of the database file alone is empty.
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from faultlab.lab.blackbox.sessions import copy_session_files
from faultlab.lab.errors import LabUsageError
from faultlab.lab.read.agentlogs import read_openai_agents_sqlite

WRITER = """
import os, sqlite3, sys, json
conn = sqlite3.connect(sys.argv[1])
conn.execute("PRAGMA journal_mode=WAL")
conn.execute("CREATE TABLE agent_messages "
             "(id INTEGER PRIMARY KEY, session_id TEXT, message_data TEXT)")
for text in ("Refund order 7", "Continue."):
    conn.execute("INSERT INTO agent_messages (session_id, message_data) VALUES (?, ?)",
                 ("s", json.dumps({"role": "user", "content": text})))
conn.commit()
print("written", flush=True)
sys.stdin.read()  # parked until killed: no close, no checkpoint
"""


def killed_writer(db: Path) -> None:
    child = subprocess.Popen([sys.executable, "-c", WRITER, str(db)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, start_new_session=True)  # fmt: skip
    try:
        assert child.stdout is not None and child.stdout.readline() == b"written\n"
    finally:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait(10)
        assert child.stdin is not None and child.stdout is not None
        child.stdin.close()
        child.stdout.close()


def read(copy: Path) -> list[dict[str, Any]] | None:
    return read_openai_agents_sqlite(copy).history.to_json()


def test_a_wal_database_is_copied_with_its_sidecars(tmp_path: Path) -> None:
    home, case = tmp_path / "home", tmp_path / "case"
    home.mkdir()
    case.mkdir()
    db = home / "session.sqlite3"
    killed_writer(db)
    assert (home / "session.sqlite3-wal").stat().st_size > 0  # the rows are only there

    shown: dict[str, Any] = {}

    def show(name: str, value: Any) -> Path:
        shown[name] = value
        (case / name).write_bytes(orjson.dumps(value))
        return case / name

    copies = copy_session_files([db], case, "at-kill", read, show)
    assert copies["at-kill:session.sqlite3"] == str(case / "at-kill-0-session.sqlite3")
    assert copies["at-kill:session.sqlite3-wal"] == str(case / "at-kill-0-session.sqlite3-wal")
    texts = [m["text"] for m in shown["at-kill-0-session.sqlite3.history.json"]]
    assert texts == ["Refund order 7", "Continue."]

    # What the copy was before: the database file alone does not even hold
    # the table (it is in the WAL too), so the reader had nothing to show.
    alone = tmp_path / "alone" / "session.sqlite3"
    alone.parent.mkdir()
    shutil.copyfile(db, alone)
    with pytest.raises(LabUsageError, match="no such table: agent_messages"):
        read(alone)


def test_a_glob_that_names_the_sidecars_copies_each_once(tmp_path: Path) -> None:
    # opencode's glob `*.db*` matches `opencode.db` and `opencode.db-wal`:
    # they keep one index, so the copies still match (not -0-... and -2-...).
    home, case = tmp_path / "home", tmp_path / "case"
    home.mkdir()
    case.mkdir()
    db = home / "opencode.db"
    killed_writer(db)
    files = sorted(home.glob("opencode.db*"))
    assert [p.name for p in files][:2] == ["opencode.db", "opencode.db-shm"]
    copies = copy_session_files(files, case, "at-kill", lambda _: None, lambda n, v: case / n)
    assert sorted(p.name for p in case.iterdir()) == [
        "at-kill-0-opencode.db", "at-kill-0-opencode.db-shm", "at-kill-0-opencode.db-wal"]
    assert set(copies) == {"at-kill:opencode.db", "at-kill:opencode.db-shm",
                           "at-kill:opencode.db-wal"}  # fmt: skip
