# The ACP child's in-process logic (faultlab/lab/acp/child.py), with real
# pipes and a real event loop but no agent process: how the probe trace is
# read from the report pipe (lines split across reads, a broken line kept as
# `invalid`, a park noticed, EOF), how a request awaited with `call` ends
# (answered, parked first, no answer in time), what `reply` writes, and the
# JSON-RPC messages recorded in order.  The child is never started, so the
# pipes are put in its fields (`_report_fd`, `_reply_fd`, `_parked`,
# `_exited`) the way `AcpChild.start` does; no mock.
from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from acp.connection import StreamDirection, StreamEvent

from faultlab.lab.acp.child import AcpChild, Parked
from faultlab.lab.process.live import kill_all, live
from faultlab.lab.process.spawn import ChildHung


@pytest.fixture
def child(tmp_path: Path) -> Iterator[AcpChild]:
    made = AcpChild(["agent"], tmp_path / "agent.stderr", armed="tool/logged#1")
    yield made
    for fd in (made._report_fd, made._reply_fd):
        if fd >= 0:
            os.close(fd)


def _with_report_pipe(child: AcpChild) -> int:
    """Give `child` the read end of a report pipe; the write end is returned."""
    read, write = os.pipe()
    os.set_blocking(read, False)
    child._report_fd = read
    child._parked, child._exited = asyncio.Event(), asyncio.Event()
    return write


def test_the_trace_is_read_line_by_line_across_reads(child: AcpChild) -> None:
    async def go() -> None:
        write = _with_report_pipe(child)
        os.write(write, b'{"boundary": "turn/started", "n": 1}\n{"boundary": "req')
        child._on_report()
        assert child.trace == [{"boundary": "turn/started", "n": 1}]
        os.write(write, b'uest/logged", "n": 1}\nnot json\n')
        child._on_report()
        assert child.trace[1:] == [{"boundary": "request/logged", "n": 1},
                                   {"invalid": "not json"}]  # fmt: skip
        assert not child.parked
        os.write(write, b'{"boundary": "tool/logged", "n": 1, "parked": true}\n')
        child._on_report()
        assert child.parked
        assert child._exited is not None and not child._exited.is_set()
        os.close(write)  # the agent's end closed: it exited
        child._on_report()
        assert child._exited.is_set()
        assert len(child.trace) == 4

    asyncio.run(go())


def test_nothing_to_read_changes_nothing(child: AcpChild) -> None:
    async def go() -> None:
        write = _with_report_pipe(child)
        child._on_report()  # would block: ignored
        assert child.trace == []
        assert child._exited is not None and not child._exited.is_set()
        os.close(write)

    asyncio.run(go())


def test_call_returns_the_answer_when_it_comes_first(child: AcpChild) -> None:
    async def go() -> int:
        child._parked = asyncio.Event()

        async def answer() -> int:
            await asyncio.sleep(0.01)
            return 7

        return await child.call(answer(), 5.0)

    assert asyncio.run(go()) == 7
    assert child.pending is None


def test_call_raises_parked_and_keeps_the_request_pending(child: AcpChild) -> None:
    async def go() -> None:
        child._parked = asyncio.Event()
        never: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        asyncio.get_running_loop().call_later(0.01, child._parked.set)
        with pytest.raises(Parked):
            await child.call(never, 5.0)
        assert child.pending is never and not never.cancelled()
        never.set_result(3)  # the agent answers once let go
        assert await child.pending == 3

    asyncio.run(go())


def test_call_without_answer_park_or_exit_is_a_hang(child: AcpChild) -> None:
    async def go() -> asyncio.Future[int]:
        child._parked = asyncio.Event()
        never: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        with pytest.raises(ChildHung, match=r"no answer, no boundary and no exit within 0\.05s"):
            await child.call(never, 0.05)
        await asyncio.sleep(0)
        return never

    assert asyncio.run(go()).cancelled()
    assert child.pending is None


def test_reply_unparks_and_writes_one_json_line(child: AcpChild) -> None:
    read, write = os.pipe()
    child._reply_fd = write
    child._parked = asyncio.Event()
    child._parked.set()
    child.reply("continue", after=2)
    assert not child.parked
    line = os.read(read, 1 << 16)
    os.close(read)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert orjson.loads(line) == {"action": "continue", "after": 2}


def test_a_reply_to_an_agent_gone_is_not_an_error(child: AcpChild) -> None:
    read, write = os.pipe()
    os.close(read)  # the agent's end is gone: EPIPE, suppressed
    child._reply_fd = write
    child._parked = asyncio.Event()
    child.reply("continue")


def test_messages_are_recorded_in_the_order_they_crossed(child: AcpChild) -> None:
    child._observe(StreamEvent(StreamDirection.OUTGOING, {"id": 1, "method": "initialize"}))
    child._observe(StreamEvent(StreamDirection.INCOMING, {"id": 1, "result": {}}))
    child._observe(StreamEvent(StreamDirection.INCOMING, {"method": "session/update"}))
    assert child.messages == [
        ("out", {"id": 1, "method": "initialize"}),
        ("in", {"id": 1, "result": {}}),
        ("in", {"method": "session/update"}),
    ]


def test_an_unstarted_child_is_neither_parked_nor_killed(child: AcpChild) -> None:
    before = live()  # the worker's earlier tests' entries, if any
    assert not child.parked
    child.kill()  # no process: nothing to signal
    assert live() == before  # it never joined the registry of live processes
    kill_all()
    child.release()
    assert (child._report_fd, child._reply_fd) == (-1, -1)


def test_a_child_starts_once(child: AcpChild) -> None:
    child.process = object()  # type: ignore[assignment]  # as if started

    with pytest.raises(RuntimeError, match="an AcpChild starts once"):
        asyncio.run(child.start())
    child.process = None
