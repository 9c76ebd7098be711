# What a target persisted, read by the lab's own readers: JSONL and SQLite
# sessions as one `LogView`, and where each backend keeps a session.
from __future__ import annotations

from faultlab.lab.read.jsonl import parse_log, read_log_file
from faultlab.lab.read.sqlite import (
    MAGIC,
    is_sqlite,
    parse_sqlite,
    read_sqlite_file,
    render_jsonl,
    snapshot,
)
from faultlab.lab.read.stores import (
    BACKENDS,
    LogStore,
    find_log,
    read_any,
    store_for,
)
from faultlab.lab.read.view import (
    BAD_HEADER,
    CORRUPT_COMMITTED_LOG,
    EVENT_TYPES,
    REQUEST_DUPLICATE,
    SEQ_DUPLICATE,
    SEQ_GAP,
    TURN_DUPLICATE,
    LogEvent,
    LogProblem,
    LogView,
)

__all__ = [
    "BACKENDS",
    "BAD_HEADER",
    "CORRUPT_COMMITTED_LOG",
    "EVENT_TYPES",
    "MAGIC",
    "REQUEST_DUPLICATE",
    "SEQ_DUPLICATE",
    "SEQ_GAP",
    "TURN_DUPLICATE",
    "LogEvent",
    "LogProblem",
    "LogStore",
    "LogView",
    "find_log",
    "is_sqlite",
    "parse_log",
    "parse_sqlite",
    "read_any",
    "read_log_file",
    "read_sqlite_file",
    "render_jsonl",
    "snapshot",
    "store_for",
]
