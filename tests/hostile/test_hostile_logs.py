# Hostile session logs through the real CLI (`inspect`), both backends: files
# that are not files (exit 2, one line naming the file), and logs that are
# torn, damaged, foreign or absurd (exit 1 with a message that says what is
# wrong, where, once, and in words that are true; exit 0 where nothing is).
# Never a traceback (exit 3), never a hang, bounded memory, nothing left
# running (issue 22).
from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hostile_helpers import HEADER, Setup, event, jsonl_log, sparse, sqlite_log, write

pytestmark = pytest.mark.realprocess

# --- what cannot be read as a log at all: exit 2, one line --------------------------------

REFUSED: dict[str, tuple[Setup, str, tuple[str, ...]]] = {
    "fifo": (lambda tmp: os.mkfifo(tmp / "log"), "log", ("log: is a FIFO",)),
    "dev-zero": (lambda tmp: None, "/dev/zero", ("/dev/zero: is a character device",)),
    "dev-null": (lambda tmp: None, "/dev/null", ("/dev/null: is a character device",)),
    "symlink-loop": (
        lambda tmp: (tmp / "log").symlink_to("log"), "log", ("log: is a symlink loop",)
    ),
    "dangling-symlink": (
        lambda tmp: (tmp / "log").symlink_to("gone"), "log", ("log: no such", "dangling")
    ),
    "missing": (lambda tmp: None, "nowhere.jsonl", ("nowhere.jsonl: no such session log",)),
    "oversized-sparse": (
        sparse("log", (256 << 20) + 1), "log", ("log: is 268435457 bytes", "limit")
    ),
    "directory-without-log": (lambda tmp: (tmp / "d").mkdir(), "d", ("d: no session log",)),
    "directory-with-both": (
        lambda tmp: ((tmp / "d").mkdir(), (tmp / "d" / "session.jsonl").write_bytes(HEADER),
                     (tmp / "d" / "session.sqlite").write_bytes(b"x")),
        "d", ("holds both",),
    ),
    "session-log-is-a-fifo": (
        lambda tmp: ((tmp / "d").mkdir(), os.mkfifo(tmp / "d" / "session.jsonl")),
        "d", ("d/session.jsonl: is a FIFO",),
    ),
    "session-log-is-a-loop": (
        lambda tmp: ((tmp / "d").mkdir(), (tmp / "d/session.jsonl").symlink_to("session.jsonl")),
        "d", ("d/session.jsonl: is a symlink loop",),
    ),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_what_is_not_a_log_file_is_refused_in_one_line(
    name: str, faultlab_cli: Callable[..., Any], tmp_path: Path
) -> None:
    make, given, needles = REFUSED[name]
    make(tmp_path)
    out = faultlab_cli("inspect", given, timeout=30)
    assert out.code == 2, (out.code, out.stderr[-2000:])
    line = out.one_line_error()
    for needle in needles:
        assert needle in line, line
    assert out.left == ()


@pytest.mark.parametrize("reader", ["codex", "claude-code"])
@pytest.mark.parametrize("given", ["fifo", "/dev/zero"])
def test_an_agent_log_reader_refuses_what_is_not_a_file(
    reader: str, given: str, faultlab_cli: Callable[..., Any], tmp_path: Path
) -> None:
    os.mkfifo(tmp_path / "fifo")
    out = faultlab_cli("inspect", given, "--reader", reader, timeout=30)
    assert out.code == 2, (out.code, out.stderr[-2000:])
    assert given in out.one_line_error()
    assert "FIFO" in out.stderr or "character device" in out.stderr


# --- logs that read, with problems or without: exit 0 or 1, true words ----------------------

LOG = jsonl_log()
TURN_END = event(5, "turn/end", {"turn": 0, "reason": {"kind": "completed"}})


def _sqlite(mutate: Callable[[Path], object]) -> Setup:
    def make(tmp: Path) -> None:
        sqlite_log(tmp / "s")
        mutate(tmp / "s" / "session.sqlite")
        os.replace(tmp / "s" / "session.sqlite", tmp / "log")

    return make


def _sql(*statements: str) -> Callable[[Path], object]:
    def run(path: Path) -> None:
        db = sqlite3.connect(path)
        for statement in statements:
            db.execute(statement)
        db.commit()
        db.close()

    return run


def _cut(size: int | None = None, fraction: float | None = None) -> Callable[[Path], object]:
    def cut(path: Path) -> None:
        data = path.read_bytes()
        path.write_bytes(data[: size if size is not None else int(len(data) * (fraction or 0))])

    return cut


def _foreign(path: Path) -> None:
    path.unlink()
    _sql("CREATE TABLE notes (x)", "INSERT INTO notes VALUES (1)")(path)


# name -> (make `log` in tmp_path, exit code, needles that must be in stderr, words that must not)
READ: dict[str, tuple[Setup, int, tuple[str, ...], tuple[str, ...]]] = {
    # the rows of issue 22
    "negative-seq": (
        write("log", LOG.replace(b'"seq":3,', b'"seq":-1,')), 1,
        ("CORRUPT_COMMITTED_LOG", "field 'seq' is negative (-1)"), ("SEQ_DUPLICATE",),
    ),
    "negative-seq-last": (
        write("log", LOG.replace(b'"seq":5,', b'"seq":-1,')), 0,
        ("cut on load", "field 'seq' is negative"), ("SEQ_DUPLICATE", "torn"),
    ),
    "undecodable-complete-last-line": (
        write("log", LOG + b'{"seq":6, garbage}\n'), 0,
        ("cut on load", "line 8 is a whole line but damaged"), ("torn",),
    ),
    "torn-last-line": (
        write("log", LOG + b'{"seq":6,"ty'), 0, ("a torn tail (line 8 has no newline",), (),
    ),
    "location-once": (
        write("log", LOG.replace(b'"seq":3,', b'"seq":2,')), 1,
        ("SEQ_DUPLICATE: line 5 (byte",), ("line 5, byte",),
    ),
    "sqlite-truncated-half": (
        _sqlite(_cut(fraction=0.5)), 1, ("the database is truncated",), ("unable to open",),
    ),
    "sqlite-truncated-50-bytes": (
        _sqlite(_cut(size=50)), 1, ("truncated: 50 byte(s)",), ("unable to open",),
    ),
    "sqlite-foreign": (
        _sqlite(_foreign), 1, ("not a faultlab session database", "notes"),
        ("line 1, byte 0", "line 1 (byte 0)"),
    ),
    # what already behaved
    "valid": (write("log", LOG), 0, ("log is readable and its history is valid",), ()),
    "empty-file": (write("log", b""), 1, ("BAD_HEADER", "no complete session header"), ()),
    "header-only": (write("log", HEADER), 0, ("0 event(s)",), ()),
    "header-not-json": (write("log", b"{nope\n"), 1, ("BAD_HEADER", "header is not JSON"), ()),
    "header-format-9": (
        write("log", HEADER.replace(b'"format":1', b'"format":9')), 1, ("'format' is 9",), (),
    ),
    "committed-corruption": (
        write("log", LOG.replace(event(2, "step/start", {"turn": 0, "step": 0}), b"\0\n")),
        1, ("CORRUPT_COMMITTED_LOG", "line 4 (byte"), (),
    ),
    "seq-gap": (
        write("log", LOG.replace(b'"seq":3,', b'"seq":4,').replace(b'"seq":4,"type":"step/end"',
                                                                 b'"seq":5,"type":"step/end"')),
        1, ("SEQ_GAP",), (),
    ),
    "open-turn": (
        write("log", LOG.replace(TURN_END, b"")), 0, ("crash repair would append", "turn/end"), (),
    ),
    "binary-garbage": (write("log", bytes(range(256)) * 64), 1, ("BAD_HEADER",), ()),
    "nul-bytes": (write("log", b"\0" * 4096), 1, ("BAD_HEADER",), ()),
    "invalid-utf8-line": (
        write("log", LOG.replace(b'"hi"', b'"\xff\xfe"')), 1, ("CORRUPT_COMMITTED_LOG",), (),
    ),
    "json-nested-2000-deep": (
        write("log", HEADER + b"[" * 2000 + b"]" * 2000 + b"\n" + TURN_END), 1,
        ("CORRUPT_COMMITTED_LOG", "not JSON"), (),
    ),
    "one-long-line": (write("log", HEADER + b"x" * (8 << 20)), 0, ("cut on load",), ()),
    "bool-seq": (
        write("log", LOG.replace(b'"seq":3,', b'"seq":true,')), 1, ("'seq' is missing or not",), (),
    ),
    "huge-seq": (
        write("log", LOG.replace(b'"seq":3,', b'"seq":' + b"9" * 30 + b",")), 1,
        ("CORRUPT_COMMITTED_LOG",), (),
    ),
    "nan-time": (
        write("log", LOG.replace(b'"time":0.5', b'"time":NaN', 1)), 1,
        ("CORRUPT_COMMITTED_LOG",), (),
    ),
    "sqlite-valid": (_sqlite(lambda p: None), 1, ("20 event(s)",), ()),  # 20 open turns
    "sqlite-magic-only": (write("log", b"SQLite format 3\x00"), 1, ("truncated",), ()),
    "sqlite-no-header-row": (_sqlite(_sql("DELETE FROM header")), 1, ("0 rows",), ()),
    "sqlite-bad-row": (
        _sqlite(_sql("UPDATE events SET data = 'nope' WHERE seq = 3")), 1,
        ("CORRUPT_COMMITTED_LOG", "row 4 (rowid"), ("line 5",),
    ),
    "sqlite-flipped-page": (
        _sqlite(lambda p: p.write_bytes(p.read_bytes()[:4096] + b"\xa5" * 4096
                                        + p.read_bytes()[8192:])),
        1, ("BAD_HEADER",), (),
    ),
}


@pytest.mark.parametrize("name", sorted(READ))
def test_a_hostile_log_is_read_in_true_words(
    name: str, faultlab_cli: Callable[..., Any], tmp_path: Path
) -> None:
    make, code, needles, never = READ[name]
    make(tmp_path)
    out = faultlab_cli("inspect", "log", timeout=30)
    assert "Traceback" not in out.stderr, out.stderr[-3000:]
    assert out.code == code, (out.code, out.stderr[-3000:])
    for needle in needles:
        assert needle in out.stderr, out.stderr[-3000:]
    for word in never:
        assert word not in out.stderr, out.stderr[-3000:]
    assert out.left == ()
