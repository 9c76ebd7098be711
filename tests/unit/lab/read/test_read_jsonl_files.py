# The lab's own log reader on files (missing, a directory, unreadable, empty),
# its linear work on many bad lines, and the standard library's decoder
# reading the same log as orjson.
from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from jsonl_logs import HEADER, TURN, codes, line, lines

from faultlab.lab.read.jsonl import parse_log, read_log_file
from faultlab.lab.read.view import BAD_HEADER, CORRUPT_COMMITTED_LOG

# --- files -------------------------------------------------------------------------


def test_reading_a_file_equals_parsing_its_bytes(tmp_path: Path) -> None:
    data = HEADER + lines(TURN) + b'{"torn'
    path = tmp_path / "session.jsonl"
    path.write_bytes(data)
    assert read_log_file(path) == parse_log(data, str(path))
    assert read_log_file(str(path)) == parse_log(data, str(path))


@pytest.mark.parametrize("where", ["missing.jsonl", "file/inside-a-file.jsonl"])
def test_a_missing_file_exists_false_without_problems(tmp_path: Path, where: str) -> None:
    (tmp_path / "file").write_bytes(b"x")
    view = read_log_file(tmp_path / where)
    assert not view.exists
    assert view.problems == () and view.events == () and view.header is None
    assert (view.size, view.valid_size, view.torn_bytes) == (0, 0, 0)


def test_a_directory_is_a_bad_header_not_an_exception(tmp_path: Path) -> None:
    view = read_log_file(tmp_path)
    assert view.exists
    assert codes(view) == [BAD_HEADER]
    assert "directory" in view.problems[0].message


def test_an_unreadable_path_is_a_bad_header_not_an_exception(tmp_path: Path) -> None:
    view = read_log_file(str(tmp_path / "nul\0byte"))
    assert codes(view) == [BAD_HEADER]
    assert "cannot read" in view.problems[0].message


def test_an_empty_file_is_a_bad_header(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    path.write_bytes(b"")
    view = read_log_file(path)
    assert view.exists and codes(view) == [BAD_HEADER]


# --- linear work -----------------------------------------------------------------------


def counting_loads() -> tuple[list[int], Callable[[bytes], Any]]:
    calls = [0]

    def loads(raw: bytes) -> Any:
        calls[0] += 1
        return orjson.loads(raw)

    return calls, loads


def test_many_committed_bad_lines_cost_linear_work() -> None:
    n = 3000
    data = HEADER + lines(TURN[:1]) + b"{bad\n" * n + lines(TURN[1:], first=1)
    calls, loads = counting_loads()
    view = parse_log(data, "s", loads=loads)
    assert len(view.problems) == n
    lines_in_file = data.count(b"\n")
    assert 0 < calls[0] <= 2 * lines_in_file + 2


def test_damage_near_the_end_of_a_big_log_scans_back_only_to_it() -> None:
    body = b"".join(line(i, "assistant/chunk", {"turn": 0}) for i in range(5000))
    data = HEADER + body + b"{bad\n" + b"{worse\n" * 3
    calls, loads = counting_loads()
    view = parse_log(data, "s", loads=loads)
    assert view.problems == () and len(view.events) == 5000
    assert calls[0] <= 5000 + 1 + 1 + 3 + 1


# --- the decoder -------------------------------------------------------------------


def test_the_standard_library_decoder_reads_the_same_log(tmp_path: Path) -> None:
    # `faultlab bench` compares orjson with json: both must see the same log,
    # including a committed bad line (the later turn/end scan) and a torn tail.
    data = (
        HEADER
        + lines(TURN[:3])
        + line(3, "request/header", {"turn": 0, "step": 0, "envelope": {"digest": "ab"}})
        + line(4, "assistant/chunk", {"turn": 0, "step": 0, "index": 0, "delta": "héllo \u2028"})
        + b"{bad\n"
        + lines(TURN[6:], first=6)
        + lines(TURN[:2], first=10, turn=1)
        + b'{"seq":12,"ty'
    )
    path = tmp_path / "session.jsonl"
    path.write_bytes(data)
    fast, slow = parse_log(data, "s"), parse_log(data, "s", loads=json.loads)
    assert slow.events == fast.events and slow.header == fast.header
    assert (slow.size, slow.valid_size, slow.torn_bytes) == (
        fast.size,
        fast.valid_size,
        fast.torn_bytes,
    )
    # The decoders word their errors differently; where and what is the same.
    where = [(p.code, p.line, p.offset) for p in fast.problems]
    assert [(p.code, p.line, p.offset) for p in slow.problems] == where
    assert codes(slow) == [CORRUPT_COMMITTED_LOG] and slow.torn_bytes == len(b'{"seq":12,"ty')
    assert [event.seq for event in slow.events] == [0, 1, 2, 3, 4, 6, 7, 8, 9, 10, 11]
    assert read_log_file(path, loads=json.loads).events == fast.events
    bad_header = b"{nope\n" + lines(TURN)
    assert codes(parse_log(bad_header, "s", loads=json.loads)) == [BAD_HEADER]

