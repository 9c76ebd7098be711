# Small JSONL session logs for the reader's tests: a header, event lines with
# seqs of one's choosing, one complete turn of every event type, and what a
# view says in short (its problem codes, its seqs).  Shared by
# test_read_jsonl.py, test_read_jsonl_files.py and test_read_jsonl_properties.py.
from __future__ import annotations

from typing import Any

import orjson

from faultlab.lab.read.view import LogView

HEADER = b'{"type":"session","format":1,"id":"demo","createdAt":1796010133.84}\n'


def line(seq: int, kind: str, data: dict[str, Any] | None = None, time: float = 1.5) -> bytes:
    return orjson.dumps({"seq": seq, "type": kind, "time": time, "data": data or {}}) + b"\n"


def lines(kinds: list[str], first: int = 0, turn: int = 0) -> bytes:
    # One turn number for every line: a second turn needs its own (`turn`), or
    # its turn/start repeats one (TURN_DUPLICATE).
    return b"".join(line(first + i, kind, {"turn": turn}) for i, kind in enumerate(kinds))


TURN = [
    "turn/start",
    "user/message",
    "step/start",
    "request/header",
    "assistant/chunk",
    "assistant/message",
    "tool/call",
    "tool/result",
    "step/end",
    "turn/end",
]


def codes(view: LogView) -> list[str]:
    return [problem.code for problem in view.problems]


def seqs(view: LogView) -> list[int]:
    return [event.seq for event in view.events]
