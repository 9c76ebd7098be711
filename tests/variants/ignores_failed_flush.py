"""Variant: the request checkpoint logs a failed flush and calls the model anyway.

Bug imitated: a "best effort" persistence layer that catches the write error
(disk full, EIO), logs a warning and carries on, so the model is called (and
billed, and may act) for a request that will be lost by the next crash.

The oracle must report: DISPATCH_AFTER_FAILED_CHECKPOINT (G9).
Shows at: payment.toml request/logged#1 under the io-error fault.
"""

from __future__ import annotations

import contextlib
from typing import Any

from _common import edit_semantic_policy, run

from faultlab.runtime.host import LLM_STREAM
from faultlab.runtime.persistence import FlushError, PersistenceCoordinator


def _ignoring(coordinator: PersistenceCoordinator) -> dict[str, Any]:
    async def checkpoint(request: Any, next_: Any) -> Any:
        with contextlib.suppress(FlushError):  # the bug: carry on as if it were durable
            await coordinator.flush()
        return await next_(request)

    return {LLM_STREAM: lambda _reference: checkpoint}


edit_semantic_policy(_ignoring)

if __name__ == "__main__":
    run()
