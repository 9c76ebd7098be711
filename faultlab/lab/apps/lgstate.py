# A LangGraph thread as it is persisted, read with the framework's own
# saver and serializer (SqliteSaver over a copy of the app's database): the
# checkpoint chain, the latest checkpoint's messages as the lab's History,
# and its pending writes.  langgraph is imported inside the function, so
# the lab imports this module without the optional extra installed.
from __future__ import annotations

import sqlite3
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from faultlab.lab.errors import LabUsageError
from faultlab.lab.read.histories import Call, History, Message
from faultlab.userfiles import copy_target

__all__ = ["PersistedThread", "read_thread", "to_history"]


@dataclass(frozen=True, slots=True)
class PersistedThread:
    """What a resumed process would find: `history` is the latest
    checkpoint's messages; `pending` its pending writes (task name,
    channel); `chain` each checkpoint's step and id, oldest first;
    `scheduled` the nodes the latest checkpoint will run next; `forks`
    the checkpoints (the empty string: the thread's start) that more than
    one checkpoint names as its parent: two writers continued from the same
    point, and the chain is a tree."""

    history: History
    pending: tuple[tuple[str, str], ...]
    chain: tuple[tuple[int, str], ...]
    scheduled: tuple[str, ...]
    pending_history: History  # messages the pending writes would add
    forks: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"history": self.history.to_json(), "pending": [list(p) for p in self.pending],
                "chain": [list(c) for c in self.chain], "scheduled": list(self.scheduled),
                "pendingMessages": self.pending_history.to_json(),
                "forks": list(self.forks)}  # fmt: skip


def to_history(values: Any) -> History:
    """LangChain messages (or one) as the lab's normalised History, read by
    their `type`, so this module needs no langchain import."""
    out: list[Message] = []
    for m in values if isinstance(values, list) else [values]:
        kind = getattr(m, "type", "")
        content = getattr(m, "content", "")
        text = content if isinstance(content, str) else str(content)
        if kind == "human":
            out.append(Message("user", text))
        elif kind == "ai":
            calls = tuple(Call(str(c["id"]), str(c["name"]), dict(c["args"]))
                          for c in getattr(m, "tool_calls", ()))  # fmt: skip
            out.append(Message("assistant", text, calls))
        elif kind == "tool":
            out.append(Message("tool", text, (), str(m.tool_call_id),
                               getattr(m, "status", "") == "error"))  # fmt: skip
    return History(tuple(out))


def read_thread(db: Path, thread: str) -> PersistedThread:
    """The thread `thread` of the SqliteSaver database `db` (empty if none)."""
    try:
        from langgraph.checkpoint.sqlite import SqliteSaver
    except ImportError:
        raise LabUsageError("reading LangGraph state needs faultlab[langgraph]") from None
    if not db.exists():
        return PersistedThread(History(()), (), (), (), History(()))
    with tempfile.TemporaryDirectory(prefix="faultlab-lg-") as scratch:
        copy = Path(scratch) / db.name
        copy_target(db, copy, what="checkpoint database")  # bounded, never through a link
        for suffix in ("-wal", "-shm"):  # a killed writer's WAL holds its commits
            side = db.with_name(db.name + suffix)
            copy_target(side, copy.with_name(copy.name + suffix), what="checkpoint WAL")
        conn = sqlite3.connect(copy, check_same_thread=False)
        try:
            # A scratch copy: the saver's setup writes to it (its tables, the
            # WAL mode) and closing it checkpoints the WAL, and none of that
            # needs to reach the disk (fsyncs were most of a reading's time).
            conn.execute("PRAGMA synchronous=OFF")
            saver = SqliteSaver(conn)
            tuples = list(saver.list({"configurable": {"thread_id": thread}}))
        finally:
            conn.close()
    if not tuples:
        return PersistedThread(History(()), (), (), (), History(()))
    latest = tuples[0]
    values = latest.checkpoint["channel_values"]
    pending_msgs: list[Any] = []
    pending = []
    for task_id, channel, value in latest.pending_writes or ():
        pending.append((task_id, channel))
        if channel == "messages":
            pending_msgs.extend(value if isinstance(value, list) else [value])
    scheduled = tuple(sorted(c.removeprefix("branch:to:") for c in values
                             if c.startswith("branch:to:")))  # fmt: skip
    chain = tuple((int(t.metadata.get("step", -1)), str(t.checkpoint["id"]))
                  for t in reversed(tuples))  # fmt: skip
    return PersistedThread(to_history(values.get("messages", [])), tuple(pending), chain,
                           scheduled, to_history(pending_msgs), _forks(tuples))  # fmt: skip


def _forks(tuples: list[Any]) -> tuple[str, ...]:
    """Parents named by more than one checkpoint of the thread's root
    namespace (a subgraph's checkpoints have parents of their own)."""
    children: Counter[str] = Counter()
    for t in tuples:
        if t.config["configurable"].get("checkpoint_ns", ""):
            continue
        parent = (t.parent_config or {}).get("configurable", {}).get("checkpoint_id", "")
        children[str(parent)] += 1
    return tuple(sorted(p for p, n in children.items() if n > 1))
