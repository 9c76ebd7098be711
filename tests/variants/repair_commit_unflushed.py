"""Variant: the repair's commit reports durable without flushing.

Bug imitated: crash repair appends its events and reports them committed
(`repair/durable`) without awaiting the coordinator's flush ("the shutdown
flush will write them anyway"). Under SIGKILL nothing shows: the child's
persistence plugin flushes and fsyncs the repair on its way out, before
anyone looks. A power loss between `repair/durable` and that shutdown flush
loses a repair the runtime already acted on as durable.

The oracle must report: REPAIR_LOST (G4).
Shows at: payment.toml flush/written#2 under power-loss: the recovered
state's repair child reports repair/durable for seqs 5..8, and a power loss
at its next flush/written (the shutdown flush, written, not yet fsynced)
leaves the log without them.
"""

from __future__ import annotations

from _common import run

from faultlab.runtime import app
from faultlab.runtime.persistence import PersistenceCoordinator
from faultlab.runtime.session import SessionLog
from faultlab.runtime.tools import Tools

_reference_commit = app.commit_repair


class _FlushDropped:
    """The coordinator as the buggy commit sees it: its flush does nothing."""

    async def flush(self) -> None:
        return None  # the bug: the repair's events stay in memory


async def commit_without_flush(
    log: SessionLog, _coordinator: PersistenceCoordinator, tools: Tools, say: app.Say
) -> int:
    # Same plan, same boundaries (repair/logged, repair/durable), no flush between.
    return await _reference_commit(log, _FlushDropped(), tools, say)  # type: ignore[arg-type]


app.commit_repair = commit_without_flush  # type: ignore[assignment]

if __name__ == "__main__":
    run()
