# The pieces every reader of an agent's own session log shares: the
# `AgentLog` it returns, a JSONL file's records (a torn last line skipped and
# counted, never an error), a history read by the model server's own parser
# for the log's wire, item by item, so a bad item is skipped, not fatal, and
# a session database opened read-only (a live agent keeps its write lock).
from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from faultlab.lab.errors import LabUsageError
from faultlab.lab.read.histories import History
from faultlab.lab.read.wire import WireError

__all__ = ["AgentLog", "jsonl_records", "parsed_history", "sqlite_read_only"]


@dataclass(frozen=True, slots=True)
class AgentLog:
    """An agent's session log as read: the history it would resume from,
    and how many lines (or rows) could not be parsed (a torn tail)."""

    path: str
    history: History
    skipped: int = 0


def jsonl_records(data: bytes) -> tuple[list[dict[str, Any]], int]:
    """The JSON objects of a JSONL file, and how many lines were not one."""
    records: list[dict[str, Any]] = []
    skipped = 0
    for raw in data.split(b"\n"):
        if not raw.strip():
            continue
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError:
            skipped += 1  # a torn (partial) line from a kill mid-write
            continue
        if isinstance(value, dict):
            records.append(value)
        else:
            skipped += 1
    return records, skipped


def parsed_history(
    parse: Callable[[Any], History], key: str, items: Iterable[dict[str, Any]]
) -> tuple[History, int]:
    """The history of `items` read by the model server's own parser for
    their wire (read/wire.py), so a log and a request are read alike; an item
    of the wrong shape is skipped and counted (a log is read, never refused)."""
    good: list[dict[str, Any]] = []
    skipped = 0
    for item in items:
        try:
            parse({key: [item]})
        except WireError:
            skipped += 1
            continue
        good.append(item)
    return parse({key: good}), skipped


@contextlib.contextmanager
def sqlite_read_only(where: Path, what: str) -> Iterator[sqlite3.Connection]:
    """A read-only connection to the database `where`; whatever SQLite
    says about a file that is not `what` (a damaged one, another format)
    becomes one LabUsageError line naming the file."""
    try:
        conn = sqlite3.connect(f"file:{where}?mode=ro", uri=True)
        try:
            yield conn
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        raise LabUsageError(f"{where}: not {what}: {exc}") from None
    except UnicodeDecodeError:  # SQLite's message about a damaged file is not UTF-8
        raise LabUsageError(f"{where}: not {what} (damaged)") from None
