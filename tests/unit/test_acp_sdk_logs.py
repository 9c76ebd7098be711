"""The ACP SDK logs an agent that hung up mid-send with `logging.exception`
on the root logger; the lab reports that failure as its verdict, so the
SDK's traceback must not reach the user's terminal (a flaky traceback in
`explore --drive acp` against a target that exits at once)."""

from __future__ import annotations

import asyncio
import logging

import pytest
from acp.task.supervisor import TaskSupervisor

from faultlab.lab.acp.child import _quiet_sdk_tracebacks


async def _hung_up() -> None:
    raise ConnectionResetError("Connection lost")


def test_the_sdks_traceback_is_dropped_and_other_logs_pass(
    caplog: pytest.LogCaptureFixture,
) -> None:
    _quiet_sdk_tracebacks()
    _quiet_sdk_tracebacks()  # installed once however often an agent connects
    assert sum(type(f).__name__ == "_SdkTracebacks" for f in logging.getLogger().filters) == 1

    async def main() -> None:
        supervisor = TaskSupervisor(source="test")
        task = asyncio.ensure_future(_hung_up())
        with pytest.raises(ConnectionResetError):
            await task
        supervisor._on_done(task, None)  # the SDK's own logging.exception call

    with caplog.at_level(logging.WARNING):
        asyncio.run(main())
        try:
            raise ValueError("ours")
        except ValueError:
            logging.exception("a log of faultlab's own with a traceback")
    messages = [r.getMessage() for r in caplog.records]
    assert not any("Unhandled error" in m for m in messages), messages
    assert "a log of faultlab's own with a traceback" in messages
