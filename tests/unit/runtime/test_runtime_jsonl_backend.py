# The JSONL backend and its reader: round trip, batch seq checks, atomic
# creation, torn tails, corruption diagnostics, the writer lock.
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from faultlab.runtime.backends import (
    JsonlBackend,
    SessionCorruptError,
    SessionExistsError,
    SessionLockedError,
    SessionMissingError,
)
from faultlab.runtime.backends.jsonl_format import read_log
from faultlab.runtime.events import Event


def events(n: int, start: int = 0) -> list[Event]:
    types = ["turn/start", "user/message", "step/start", "step/end"]
    return [Event(i, types[i % 4], 1.5, {"turn": 0, "i": i}) for i in range(start, start + n)]


def written(tmp_path: Path, n: int) -> JsonlBackend:
    backend = JsonlBackend(tmp_path / "s")
    backend.open(session_id="abc", create=True, resume=False)
    backend.append_batch(events(n))
    backend.sync()
    return backend


def test_round_trip(tmp_path: Path) -> None:
    backend = written(tmp_path, 7)
    loaded = backend.load()
    assert loaded.header["id"] == "abc" and loaded.header["format"] == 1
    assert [e.to_json() for e in loaded.events] == [e.to_json() for e in events(7)]
    assert loaded.cut_bytes == 0 and loaded.notes == ()
    backend.close()


def test_creation_leaves_no_temp_file_and_a_complete_header(tmp_path: Path) -> None:
    backend = JsonlBackend(tmp_path / "s")
    backend.open(session_id="abc", create=True, resume=False)
    names = sorted(p.name for p in (tmp_path / "s").iterdir())
    assert names == ["session.jsonl", "session.jsonl.lock"]
    assert (tmp_path / "s" / "session.jsonl").read_bytes().endswith(b"\n")
    backend.close()


def test_append_rejects_a_batch_not_starting_at_the_next_seq(tmp_path: Path) -> None:
    backend = written(tmp_path, 3)
    with pytest.raises(ValueError, match="starts at seq 4"):
        backend.append_batch(events(1, start=4))
    with pytest.raises(ValueError, match="gap inside batch"):
        backend.append_batch([*events(1, start=3), *events(1, start=5)])
    assert len(backend.load().events) == 3
    backend.close()


def test_a_new_session_is_refused_over_an_existing_one(tmp_path: Path) -> None:
    written(tmp_path, 1).close()
    with pytest.raises(SessionExistsError, match="already exists"):
        JsonlBackend(tmp_path / "s").open(session_id=None, create=True, resume=False)


def test_loading_a_missing_session(tmp_path: Path) -> None:
    with pytest.raises(SessionMissingError):
        JsonlBackend(tmp_path / "nothing").load()
    with pytest.raises(SessionMissingError):
        JsonlBackend(tmp_path / "nothing").open(session_id=None, create=False, resume=True)


def test_torn_last_line_is_cut_and_kept_aside(tmp_path: Path) -> None:
    written(tmp_path, 4).close()
    path = tmp_path / "s" / "session.jsonl"
    intact = path.stat().st_size
    with open(path, "ab") as f:
        f.write(b'{"seq":4,"type":"step/st')
    backend = JsonlBackend(tmp_path / "s")
    loaded = backend.open(session_id=None, create=False, resume=True)
    assert len(loaded.events) == 4 and loaded.cut_bytes == 24
    assert "torn last line" in loaded.notes[0]
    assert path.stat().st_size == intact  # cut before any new append
    assert (tmp_path / "s" / f"session.jsonl.cut-{intact}").read_bytes().startswith(b'{"seq":4')
    backend.append_batch(events(1, start=4))
    backend.sync()
    assert [e.seq for e in backend.load().events] == [0, 1, 2, 3, 4]
    backend.close()


def _lines(n_before: int, bad: bytes, after: list[dict[str, object]]) -> bytes:
    header = b'{"type":"session","format":1,"id":"x","createdAt":0}\n'
    body = b"".join(orjson.dumps(e.to_json()) + b"\n" for e in events(n_before))
    return header + body + bad + b"\n" + b"".join(orjson.dumps(e) + b"\n" for e in after)


def test_corrupt_line_in_the_committed_region_names_line_and_offset() -> None:
    turn_end = {"seq": 4, "type": "turn/end", "time": 1, "data": {"turn": 0}}
    data = _lines(3, b'{"seq":3,"type":"step/end","ti', [turn_end])
    offset = data.index(b'{"seq":3')
    with pytest.raises(SessionCorruptError) as caught:
        read_log(data, "log.jsonl")
    assert caught.value.line == 5 and caught.value.offset == offset
    assert str(caught.value).startswith(f"log.jsonl:5: corrupt session log at byte {offset}")


def test_seq_gap_in_the_committed_region_is_corruption() -> None:
    gap = orjson.dumps({"seq": 5, "type": "step/end", "time": 1, "data": {}})
    turn_end = {"seq": 6, "type": "turn/end", "time": 1, "data": {"turn": 0}}
    with pytest.raises(SessionCorruptError, match="seq gap: seq 5 where 3"):
        read_log(_lines(3, gap, [turn_end]), "log.jsonl")
    dup = orjson.dumps({"seq": 1, "type": "step/end", "time": 1, "data": {}})
    with pytest.raises(SessionCorruptError, match="seq duplicate"):
        read_log(_lines(3, dup, [turn_end]), "log.jsonl")


def test_damage_after_the_last_turn_end_is_cut_not_fatal() -> None:
    loaded = read_log(_lines(3, b"\x00\x00\x00", []), "log.jsonl")
    assert len(loaded.events) == 3 and loaded.cut_bytes == 4
    assert "damaged after the last completed turn" in loaded.notes[0]


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"", "no complete session header"),
        (b'{"type":"session","format":1', "no complete session header"),
        (b'{"type":"session","format":2,"id":"x"}\n', "format"),
        (b"[1,2]\n", "not a session header"),
        (b"not json\n", "header is not JSON"),
    ],
)
def test_bad_headers_are_reported(data: bytes, problem: str) -> None:
    with pytest.raises(SessionCorruptError, match=problem):
        read_log(data, "log.jsonl")


def test_a_second_writer_in_the_same_process_is_refused(tmp_path: Path) -> None:
    first = written(tmp_path, 2)
    with pytest.raises(SessionLockedError, match=f"pid {os.getpid()}"):
        JsonlBackend(tmp_path / "s").open(session_id=None, create=False, resume=True)
    first.close()
    again = JsonlBackend(tmp_path / "s")
    again.open(session_id=None, create=False, resume=True)  # the lock went with the writer
    again.close()


def test_a_second_writer_process_is_refused_and_the_log_does_not_fork(tmp_path: Path) -> None:
    first = written(tmp_path, 2)
    before = (tmp_path / "s" / "session.jsonl").read_bytes()
    code = (
        "import sys\n"
        "from faultlab.runtime.backends import JsonlBackend, SessionLockedError\n"
        "try:\n"
        f"    backend = JsonlBackend({str(tmp_path / 's')!r})\n"
        "    backend.open(session_id=None, create=False, resume=True)\n"
        "except SessionLockedError as exc:\n"
        "    print(exc); sys.exit(5)\n"
    )
    child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert child.returncode == 5, child.stderr
    assert "locked by another live writer" in child.stdout
    assert (tmp_path / "s" / "session.jsonl").read_bytes() == before
    first.close()


def test_an_escaped_turn_end_after_damage_still_marks_it_committed() -> None:
    escaped = b'{"seq":4,"type":"turn\\/end","time":1,"data":{"turn":0}}'
    header = b'{"type":"session","format":1,"id":"x","createdAt":0}\n'
    body = b"".join(orjson.dumps(e.to_json()) + b"\n" for e in events(3))
    with pytest.raises(SessionCorruptError, match=":5:"):
        read_log(header + body + b"{bad\n" + escaped + b"\n", "log.jsonl")


def test_a_second_cut_at_the_same_offset_keeps_the_first(tmp_path: Path) -> None:
    written(tmp_path, 2).close()
    path = tmp_path / "s" / "session.jsonl"
    intact = path.stat().st_size
    for tail in (b'{"first', b'{"second'):
        with open(path, "ab") as f:
            f.write(tail)
        backend = JsonlBackend(tmp_path / "s")
        backend.open(session_id=None, create=False, resume=True)
        backend.close()
    assert (tmp_path / "s" / f"session.jsonl.cut-{intact}").read_bytes() == b'{"first'
    assert (tmp_path / "s" / f"session.jsonl.cut-{intact}.1").read_bytes() == b'{"second'
