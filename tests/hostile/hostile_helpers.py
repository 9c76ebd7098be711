# What the hostile-input corpus builds its inputs from: the smallest valid
# scenario (and one with a tool call, whose arguments a case can replace),
# the smallest valid JSONL session log, and a valid SQLite session written by
# the reference runtime's own backend.
from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

__all__ = [
    "BASE",
    "HEADER",
    "TOOL_BASE",
    "Setup",
    "deep_arguments",
    "event",
    "jsonl_log",
    "sparse",
    "sqlite_log",
    "write",
]

Setup = Callable[[Path], object]

BASE = """format = 1
name = "h"

[[turns]]
user = "hi"

  [[turns.steps]]
  text = "hello"
"""

# `{arguments}` is replaced by an inline TOML value (line 10).
TOOL_BASE = """format = 1
name = "h"

[tools.t]
result = "ok"

[[turns]]
user = "hi"
  [[turns.steps]]
  tool_calls = [{{ tool = "t", arguments = {arguments} }}]
  [[turns.steps]]
  text = "done"
"""

HEADER = b'{"type":"session","format":1,"id":"s1","createdAt":0}\n'


def deep_arguments(depth: int) -> str:
    return "{ k = " * depth + "1" + " }" * depth


def event(seq: int, kind: str, data: dict[str, object]) -> bytes:
    import orjson

    return orjson.dumps({"seq": seq, "type": kind, "time": 0.5, "data": data}) + b"\n"


def jsonl_log() -> bytes:
    """One completed turn: 6 events."""
    return HEADER + b"".join([
        event(0, "turn/start", {"turn": 0}),
        event(1, "user/message", {"turn": 0, "message": "hi"}),
        event(2, "step/start", {"turn": 0, "step": 0}),
        event(3, "assistant/message", {"turn": 0, "step": 0, "message": {
            "content": [{"type": "text", "text": "hello"}]}}),
        event(4, "step/end", {"turn": 0, "step": 0}),
        event(5, "turn/end", {"turn": 0, "reason": {"kind": "completed"}}),
    ])  # fmt: skip


def sqlite_log(directory: Path) -> bytes:
    """A session database of 20 events, written by the reference runtime's backend."""
    from faultlab.runtime.backends.sqlite import SqliteBackend
    from faultlab.runtime.events import Event

    backend = SqliteBackend(directory)
    backend.open(session_id="s1", create=True, resume=False)
    backend.append_batch([Event(i, "turn/start", 1.0, {"turn": i}) for i in range(20)])
    backend.sync()
    backend.close()
    return (directory / "session.sqlite").read_bytes()


def write(name: str, text: str | bytes) -> Setup:
    def make(tmp: Path) -> None:
        (tmp / name).write_bytes(text.encode("utf-8") if isinstance(text, str) else text)

    return make


def sparse(name: str, size: int) -> Setup:
    """A regular file of `size` bytes that takes no disk space."""

    def make(tmp: Path) -> None:
        with open(tmp / name, "wb") as file:
            os.truncate(file.fileno(), size)

    return make
