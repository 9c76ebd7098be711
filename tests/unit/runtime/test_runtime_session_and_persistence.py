# SessionLog (contiguous seqs, no re-entry) and the persistence coordinator
# (barrier, coalescing, serialization, failed flushes keep their events).
from __future__ import annotations

import asyncio
import errno
from collections.abc import Sequence
from pathlib import Path

import pytest

from faultlab.runtime.backends import JsonlBackend
from faultlab.runtime.events import Event
from faultlab.runtime.persistence import FlushError, PersistenceCoordinator
from faultlab.runtime.session import ReentrantAppendError, SessionLog


def test_append_assigns_contiguous_seqs_from_zero() -> None:
    log = SessionLog("s")
    events = [log.append("turn/start", {"turn": i}) for i in range(5)]
    assert [e.seq for e in events] == [0, 1, 2, 3, 4]
    assert log.next_seq == 5


def test_append_refuses_to_re_enter() -> None:
    log = SessionLog("s")
    log._appending = True  # as seen from inside a running append
    with pytest.raises(ReentrantAppendError):
        log.append("turn/start", {})
    assert log.next_seq == 0


def test_log_rejects_loaded_events_with_a_gap() -> None:
    with pytest.raises(ValueError, match="seq 2 where 1"):
        SessionLog("s", [Event(0, "turn/start", 0.0, {}), Event(2, "turn/end", 0.0, {})])


class CountingBackend(JsonlBackend):
    """The real JSONL backend, counting its batches (which seqs each carried)."""

    def __init__(self, directory: Path) -> None:
        super().__init__(directory)
        self.batches: list[list[int]] = []

    def append_batch(self, events: Sequence[Event]) -> None:
        super().append_batch(events)
        self.batches.append([e.seq for e in events])


def open_coordinator(tmp_path: Path) -> tuple[SessionLog, CountingBackend, PersistenceCoordinator]:
    backend = CountingBackend(tmp_path / "s")
    loaded = backend.open(session_id="s", create=True, resume=False)
    log = SessionLog(loaded.session_id, loaded.events)
    return log, backend, PersistenceCoordinator(log, backend)


def test_concurrent_flushes_coalesce_into_one_write(tmp_path: Path) -> None:
    log, backend, coordinator = open_coordinator(tmp_path)

    async def main() -> None:
        for i in range(3):
            log.append("turn/start", {"turn": i})
        await asyncio.gather(*(coordinator.flush() for _ in range(10)))

    asyncio.run(main())
    assert backend.batches == [[0, 1, 2]]
    assert coordinator.durable_seq == 3
    backend.close()


def test_flushes_are_serialized_and_never_write_an_event_twice(tmp_path: Path) -> None:
    log, backend, coordinator = open_coordinator(tmp_path)

    async def writer(k: int) -> None:
        for i in range(20):
            log.append("turn/start", {"turn": k * 100 + i})
            if i % 3 == k % 3:
                await coordinator.flush()
            await asyncio.sleep(0)

    async def main() -> None:
        await asyncio.gather(*(writer(k) for k in range(5)))
        await coordinator.flush()

    asyncio.run(main())
    flat = [seq for batch in backend.batches for seq in batch]
    assert flat == list(range(100))
    assert [e.seq for e in backend.load().events] == list(range(100))
    backend.close()


@pytest.mark.parametrize("op", ["write", "sync"])
def test_failed_flush_keeps_events_and_retry_leaves_no_gap_or_duplicate(
    tmp_path: Path, op: str
) -> None:
    log, backend, coordinator = open_coordinator(tmp_path)

    async def main() -> None:
        log.append("turn/start", {"turn": 0})
        await coordinator.flush()
        log.append("user/message", {"turn": 0, "message": "hi"})
        log.append("turn/end", {"turn": 0, "reason": {"kind": "completed"}})
        backend.arm_failure(op, errno.EIO)
        with pytest.raises(FlushError, match=r"seqs 1\.\.2"):
            await coordinator.flush()
        assert coordinator.pending == 2
        assert len(backend.load().events) == 1  # the failed batch was truncated back
        await coordinator.flush()

    asyncio.run(main())
    assert [e.seq for e in backend.load().events] == [0, 1, 2]
    assert coordinator.failed_flushes == 1
    backend.close()


def test_a_cancelled_waiter_does_not_cancel_the_shared_flush(tmp_path: Path) -> None:
    log, backend, coordinator = open_coordinator(tmp_path)

    async def main() -> None:
        log.append("turn/start", {"turn": 0})
        first = asyncio.ensure_future(coordinator.flush())
        second = asyncio.ensure_future(coordinator.flush())
        await asyncio.sleep(0)
        first.cancel()
        await second

    asyncio.run(main())
    assert coordinator.durable_seq == 1
    assert backend.batches == [[0]]
    backend.close()
