# The persistence contract every backend must keep, run on each backend of
# contract_stores.FACTORIES through the one `store` fixture (test names end in
# [jsonl], [sqlite], ...): round trip; batches that do not start at the next
# seq, or have a gap, are refused; a failed flush keeps its events and a retry
# leaves no gap or duplicate; both crash-repair classes and the interrupted
# turn; repair idempotence; an unsynced batch is not durable; a second writer
# is refused (same process and another process); empty and missing sessions;
# listing sessions.  Real files, real fsync, real processes.
from __future__ import annotations

import asyncio
import errno
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from contract_stores import FACTORIES, Factory, selected

from faultlab.runtime.backends import (
    Backend,
    SessionExistsError,
    SessionLockedError,
    SessionMissingError,
    list_sessions,
)
from faultlab.runtime.events import Event
from faultlab.runtime.persistence import FlushError, PersistenceCoordinator
from faultlab.runtime.repair import plan_repair
from faultlab.runtime.session import SessionLog


@dataclass(frozen=True)
class Store:
    """One backend under contract: its name and how to build it for a directory."""

    name: str
    factory: Factory

    @property
    def kind(self) -> str:
        return str(getattr(self.factory, "kind", self.name))


@pytest.fixture(params=selected())
def store(request: pytest.FixtureRequest) -> Store:
    return Store(request.param, FACTORIES[request.param])


@pytest.fixture
def opened(store: Store, tmp_path: Path) -> Iterator[Backend]:
    backend = store.factory(tmp_path / "s")
    backend.open(session_id="contract", create=True, resume=False)
    yield backend
    backend.close()


TYPES = ("turn/start", "user/message", "step/start", "step/end")


def events(n: int, start: int = 0) -> list[Event]:
    return [
        Event(i, TYPES[i % 4], 1.25 + i, {"turn": 0, "i": i, "text": 'é ✓ \u2028 "q"'})
        for i in range(start, start + n)
    ]


def shape(stored: Any) -> list[tuple[int, str, float, dict[str, Any]]]:
    return [(e.seq, e.type, e.time, e.data) for e in stored]


def flush(backend: Backend, batch: list[Event]) -> None:
    backend.append_batch(batch)
    backend.sync()


def reopen(store: Store, directory: Path) -> Backend:
    backend = store.factory(directory)
    backend.open(session_id=None, create=False, resume=True)
    return backend


# -- round trip, seq checks --------------------------------------------------


def test_round_trip(store: Store, opened: Backend, tmp_path: Path) -> None:
    flush(opened, events(3))
    flush(opened, events(4, start=3))
    loaded = opened.load()
    assert loaded.header["id"] == "contract" and loaded.header["format"] == 1
    assert shape(loaded.events) == shape(events(7))
    opened.close()
    again = reopen(store, tmp_path / "s")
    assert shape(again.load().events) == shape(events(7))
    flush(again, events(1, start=7))  # the next seq continues after a reopen
    assert [e.seq for e in again.load().events] == list(range(8))
    again.close()


def test_append_rejects_a_batch_not_starting_at_the_next_seq(opened: Backend) -> None:
    flush(opened, events(3))
    with pytest.raises(ValueError, match="starts at seq 4"):
        opened.append_batch(events(1, start=4))  # ahead: would leave a gap
    with pytest.raises(ValueError, match="starts at seq 2"):
        opened.append_batch(events(1, start=2))  # behind: would duplicate seq 2
    opened.sync()
    assert [e.seq for e in opened.load().events] == [0, 1, 2]


def test_append_rejects_a_gap_inside_a_batch(opened: Backend) -> None:
    flush(opened, events(3))
    with pytest.raises(ValueError, match="gap inside batch"):
        opened.append_batch([*events(1, start=3), *events(1, start=5)])
    opened.sync()
    assert [e.seq for e in opened.load().events] == [0, 1, 2]
    flush(opened, events(2, start=3))  # the refused batch left nothing behind
    assert [e.seq for e in opened.load().events] == [0, 1, 2, 3, 4]


# -- failed flushes --------------------------------------------------------------


@pytest.mark.parametrize("op", ["write", "sync"])
def test_failed_flush_keeps_buffered_events_and_retry_has_no_gap_or_duplicate(
    opened: Backend, op: str
) -> None:
    log = SessionLog("contract")
    coordinator = PersistenceCoordinator(log, opened)

    async def main() -> None:
        log.append("turn/start", {"turn": 0})
        await coordinator.flush()
        log.append("user/message", {"turn": 0, "message": "hi"})
        log.append("turn/end", {"turn": 0, "reason": {"kind": "completed"}})
        opened.arm_failure(op, errno.EIO)
        with pytest.raises(FlushError, match=r"seqs 1\.\.2"):
            await coordinator.flush()
        assert coordinator.pending == 2 and [e.seq for e in log.events] == [0, 1, 2]
        assert [e.seq for e in opened.load().events] == [0]  # nothing of it is stored
        await coordinator.flush()

    asyncio.run(main())
    assert [(e.seq, e.type) for e in opened.load().events] == [
        (0, "turn/start"),
        (1, "user/message"),
        (2, "turn/end"),
    ]
    assert coordinator.failed_flushes == 1 and coordinator.pending == 0


def test_a_batch_never_synced_is_not_durable(store: Store, opened: Backend, tmp_path: Path) -> None:
    flush(opened, events(2))
    opened.append_batch(events(2, start=2))  # written, never synced: the writer stops here
    opened.close()
    again = reopen(store, tmp_path / "s")
    stored = [e.seq for e in again.load().events]
    # JSONL's bytes are in the page cache (a SIGKILL keeps them), SQLite's
    # transaction was never committed: both are allowed, a torn mix is not.
    assert stored in ([0, 1], [0, 1, 2, 3])
    flush(again, events(1, start=len(stored)))
    assert [e.seq for e in again.load().events] == list(range(len(stored) + 1))
    again.close()


# -- crash repair ---------------------------------------------------------------

SAFE = {"read": True, "pay": False}


def crashed_turn(backend: Backend) -> dict[str, int]:
    """A turn killed mid-step: pay's tool/call is durable, read's is not."""
    log = SessionLog("contract")
    seqs = {}
    log.append("turn/start", {"turn": 0})
    log.append("user/message", {"turn": 0, "message": "pay and read"})
    log.append("step/start", {"turn": 0, "step": 0})
    blocks = [
        {"type": "tool-call", "id": "c-pay", "name": "pay", "arguments": {"amount": 4}},
        {"type": "tool-call", "id": "c-read", "name": "read", "arguments": {}},
    ]
    message = {"role": "assistant", "content": [{"type": "text", "text": "ok"}, *blocks]}
    answer = {"turn": 0, "step": 0, "message": message}
    seqs["message"] = log.append("assistant/message", answer).seq
    call = {"turn": 0, "step": 0, "callId": "c-pay", "name": "pay", "arguments": {"amount": 4}}
    seqs["call"] = log.append("tool/call", call).seq
    flush(backend, list(log.events))
    return seqs


def repair(store: Store, directory: Path) -> int:
    """What the runtime does on resume: load, plan the repair, commit it in one flush."""
    backend = reopen(store, directory)
    try:
        loaded = backend.load()
        log = SessionLog(loaded.session_id, loaded.events)
        actions = plan_repair(log.events, SAFE.get)
        for action in actions:
            log.append(action.type, action.data)
        PersistenceCoordinator(log, backend, durable_seq=len(loaded.events)).flush_now()
        return len(actions)
    finally:
        backend.close()


def test_repair_classifies_both_classes_and_closes_the_turn(
    store: Store, opened: Backend, tmp_path: Path
) -> None:
    seqs = crashed_turn(opened)
    opened.close()
    assert repair(store, tmp_path / "s") == 4
    check = store.factory(tmp_path / "s")
    tail = check.load().events[5:]
    assert [e.type for e in tail] == ["tool/result", "tool/result", "step/end", "turn/end"]
    pay, read = tail[0].data, tail[1].data
    assert (pay["callId"], pay["error"]["code"], pay["sourceEventSeqs"]) == (
        "c-pay", "TOOL_OUTCOME_UNKNOWN", [seqs["call"]],
    )  # fmt: skip
    assert pay["error"]["retry"] == "verify"
    assert (read["callId"], read["error"]["code"], read["sourceEventSeqs"]) == (
        "c-read", "TOOL_NOT_STARTED", [seqs["message"]],
    )  # fmt: skip
    assert tail[3].data["reason"] == {"kind": "interrupted"}
    assert [e.seq for e in check.load().events] == list(range(9))


def test_repair_is_idempotent(store: Store, opened: Backend, tmp_path: Path) -> None:
    crashed_turn(opened)
    opened.close()
    repair(store, tmp_path / "s")
    once = shape(store.factory(tmp_path / "s").load().events)
    assert repair(store, tmp_path / "s") == 0
    assert shape(store.factory(tmp_path / "s").load().events) == once


# -- one writer ------------------------------------------------------------------


def test_a_second_writer_in_the_same_process_is_refused(
    store: Store, opened: Backend, tmp_path: Path
) -> None:
    flush(opened, events(2))
    held = f"locked by another live writer \\(pid {os.getpid()}"
    with pytest.raises(SessionLockedError, match=held):
        reopen(store, tmp_path / "s")
    flush(opened, events(1, start=2))  # the first writer is unaffected
    opened.close()
    again = reopen(store, tmp_path / "s")  # the lock went with the writer
    assert [e.seq for e in again.load().events] == [0, 1, 2]
    again.close()


def test_a_second_writer_process_is_refused_and_the_log_does_not_fork(
    store: Store, opened: Backend, tmp_path: Path
) -> None:
    flush(opened, events(2))
    code = (
        "import sys\n"
        "from contract_stores import FACTORIES\n"
        "from faultlab.runtime.backends import SessionLockedError\n"
        "try:\n"
        f"    FACTORIES[{store.name!r}]({str(tmp_path / 's')!r}).open("
        "session_id=None, create=False, resume=True)\n"
        "except SessionLockedError as exc:\n"
        "    print(exc); sys.exit(5)\n"
    )
    here = str(Path(__file__).parent)
    env = {**os.environ, "PYTHONPATH": here + os.pathsep + os.environ.get("PYTHONPATH", "")}
    child = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env
    )
    assert child.returncode == 5, child.stderr
    assert "locked by another live writer" in child.stdout
    assert f"pid {os.getpid()}" in child.stdout
    assert shape(opened.load().events) == shape(events(2))


def test_a_new_session_is_refused_over_an_existing_one(
    store: Store, opened: Backend, tmp_path: Path
) -> None:
    opened.close()
    with pytest.raises(SessionExistsError, match="already exists"):
        store.factory(tmp_path / "s").open(session_id=None, create=True, resume=False)


# -- empty, missing, listing -------------------------------------------------------


def test_load_of_an_empty_session(store: Store, opened: Backend, tmp_path: Path) -> None:
    loaded = opened.load()
    assert loaded.events == () and loaded.session_id == "contract"
    opened.close()
    again = reopen(store, tmp_path / "s")
    assert again.load().events == ()
    flush(again, events(1))
    assert [e.seq for e in again.load().events] == [0]
    again.close()


def test_load_of_a_missing_session(store: Store, tmp_path: Path) -> None:
    with pytest.raises(SessionMissingError):
        store.factory(tmp_path / "nothing").load()
    with pytest.raises(SessionMissingError):
        store.factory(tmp_path / "nothing").open(session_id=None, create=False, resume=True)


def test_listing_sessions(store: Store, tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    assert list_sessions(store.kind, root) == ()
    for index, name in enumerate(("b", "a", "c")):
        backend = store.factory(root / name)
        backend.open(session_id=f"id-{name}", create=True, resume=False)
        flush(backend, events(index + 1))
        if name != "c":
            backend.close()  # c stays open: a live session is listed too
        else:
            live = backend
    (root / "not-a-session").mkdir()
    (root / "stray-file").write_text("x")
    listed = list_sessions(store.kind, root)
    assert [(s.session_id, Path(s.directory).name, s.events) for s in listed] == [
        ("id-a", "a", 2), ("id-b", "b", 1), ("id-c", "c", 3),
    ]  # fmt: skip
    assert all(s.problem is None and s.created_at for s in listed)
    live.close()
    with pytest.raises(SessionMissingError):
        list_sessions(store.kind, tmp_path / "no-root")
