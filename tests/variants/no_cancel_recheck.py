"""Variant: the tool checkpoint does not look at the cancel signal again.

Bug imitated: a checkpoint that checks for cancellation before it awaits the
flush but not after, so a cancellation that lands while the flush is pending
still lets the tool body run (a deploy started after the user pressed stop).

The oracle must report: DISPATCH_AFTER_CANCEL (G9).
Shows at: payment.toml tool/logged#1 under the cancel-in-checkpoint fault.
"""

from __future__ import annotations

from typing import Any

from _common import edit_semantic_policy, run

from faultlab.runtime.calls import aborted_before_dispatch, checkpoint_failed
from faultlab.runtime.host import TOOLS_EXECUTE
from faultlab.runtime.persistence import FlushError, PersistenceCoordinator


def _no_recheck(coordinator: PersistenceCoordinator) -> dict[str, Any]:
    async def checkpoint(call: Any, next_: Any) -> Any:
        if call.nested:
            return await next_(call)
        if call.cancel.is_cancelled():
            return aborted_before_dispatch(call)
        try:
            await coordinator.flush()
        except FlushError as exc:
            return checkpoint_failed(call, str(exc))
        return await next_(call)  # the bug: no second look at the signal

    return {TOOLS_EXECUTE: lambda _reference: checkpoint}


edit_semantic_policy(_no_recheck)

if __name__ == "__main__":
    run()
