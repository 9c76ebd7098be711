# A LangGraph thread as it is persisted, read with the framework's own
# saver and serializer (SqliteSaver over a copy of the app's database): the
# root namespace's checkpoint chain, its latest checkpoint's messages as the
# lab's History, its pending writes, and what the subgraphs in flight have
# made durable in namespaces of their own.  langgraph is imported inside
# the function, so the lab imports this module without the optional extra.
from __future__ import annotations

import sqlite3
import tempfile
from collections import Counter
from dataclasses import dataclass, field
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
    point, and the chain is a tree.  All of these are the root namespace's
    (checkpoint_ns ""): the thread an app resumes.  `in_flight` holds the
    messages that subgraphs running under the root's latest checkpoint have
    made durable in their own namespaces (their latest checkpoints and
    pending writes) beyond what the root holds: a resumed graph re-enters
    those subgraphs from there."""

    history: History
    pending: tuple[tuple[str, str], ...]
    chain: tuple[tuple[int, str], ...]
    scheduled: tuple[str, ...]
    pending_history: History  # messages the pending writes would add
    forks: tuple[str, ...] = ()
    in_flight: History = field(default_factory=lambda: History(()))

    def durable(self) -> History:
        """Every message a resumed process finds durable: the root's, its
        pending writes' and the subgraphs' in flight, each once."""
        return _merged(History(self.history.messages + self.pending_history.messages),
                       self.in_flight)  # fmt: skip

    def to_json(self) -> dict[str, Any]:
        return {"history": self.history.to_json(), "pending": [list(p) for p in self.pending],
                "chain": [list(c) for c in self.chain], "scheduled": list(self.scheduled),
                "pendingMessages": self.pending_history.to_json(),
                "forks": list(self.forks),
                "inFlight": self.in_flight.to_json()}  # fmt: skip


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


def read_thread(db: Path, thread: str, *, messages_key: str = "messages") -> PersistedThread:
    """The thread `thread` of the SqliteSaver database `db` (empty if none),
    its conversation read from the state key `messages_key`."""
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
    # `list` without a namespace returns every namespace's checkpoints,
    # newest first: a subgraph's brand-new (empty) input checkpoint can be
    # the newest of all, and is not the thread.
    root = [t for t in tuples if not _namespace(t)]
    if not root:
        return PersistedThread(History(()), (), (), (), History(()))
    latest = root[0]
    values = latest.checkpoint["channel_values"]
    pending = [(task_id, channel) for task_id, channel, _ in latest.pending_writes or ()]
    scheduled = tuple(sorted(c.removeprefix("branch:to:") for c in values
                             if c.startswith("branch:to:")))  # fmt: skip
    chain = tuple((int(t.metadata.get("step", -1)), str(t.checkpoint["id"]))
                  for t in reversed(root))  # fmt: skip
    history = to_history(values.get(messages_key, []))
    pending_history = to_history(_written(latest, messages_key))
    return PersistedThread(history, tuple(pending), chain, scheduled, pending_history,
                           _forks(root), _in_flight(tuples, str(latest.checkpoint["id"]),
                                                    messages_key))  # fmt: skip


def _namespace(t: Any) -> str:
    return str(t.config["configurable"].get("checkpoint_ns", ""))


def _written(t: Any, messages_key: str) -> list[Any]:
    """The messages checkpoint tuple `t`'s pending writes add."""
    out: list[Any] = []
    for _task, channel, value in t.pending_writes or ():
        if channel == messages_key:
            out.extend(value if isinstance(value, list) else [value])
    return out


def _in_flight(tuples: list[Any], root_id: str, messages_key: str) -> History:
    """The subgraphs running under the root's latest checkpoint: each
    namespace whose newest checkpoint is newer than it (checkpoint ids are
    time-ordered, as the savers' own `list` order relies on; a subgraph
    that finished did so before its parent's next checkpoint), read as its
    own latest checkpoint and pending writes."""
    newest: dict[str, Any] = {}
    for t in tuples:  # newest first
        ns = _namespace(t)
        if ns and ns not in newest:
            newest[ns] = t
    parts = [to_history([*t.checkpoint["channel_values"].get(messages_key, []),
                         *_written(t, messages_key)])
             for ns, t in sorted(newest.items())
             if str(t.checkpoint["id"]) > root_id]  # fmt: skip
    return _merged(*parts)


def _merged(*histories: History) -> History:
    """The messages of `histories` in order: the first whole, each later
    one's messages that are not already there (a subgraph's state starts
    with a copy of its parent's messages; two equal messages of one history,
    the same text said twice, both stay)."""
    if not histories:
        return History(())
    out = list(histories[0].messages)
    for history in histories[1:]:
        seen = list(out)
        out += [m for m in history.messages if m not in seen]
    return History(tuple(out))


def _forks(tuples: list[Any]) -> tuple[str, ...]:
    """Parents named by more than one checkpoint of the thread's root
    namespace (`tuples`; a subgraph's checkpoints have parents of their own)."""
    children: Counter[str] = Counter()
    for t in tuples:
        parent = (t.parent_config or {}).get("configurable", {}).get("checkpoint_id", "")
        children[str(parent)] += 1
    return tuple(sorted(p for p, n in children.items() if n > 1))
