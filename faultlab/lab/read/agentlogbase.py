# The pieces every reader of an agent's own session log shares: the
# `AgentLog` it returns, a JSONL file's records (a torn last line skipped and
# counted, never an error), and a history read by the model server's own
# parser for the log's wire, item by item, so a bad item is skipped, not fatal.
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import orjson

from faultlab.lab.read.histories import History
from faultlab.lab.read.wire import WireError

__all__ = ["AgentLog", "jsonl_records", "parsed_history"]


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
