"""Variant: a failed post-step checkpoint is ignored.

Bug imitated: the `agent/post-step` listener that flushes the step (the
assistant message and its ordered results) logs the write error and
returns, so the turn goes on: the next request is sent although the step it
builds on never became durable. The flush before that request may well
succeed (a transient EIO, a full disk freed meanwhile), which makes the bug
invisible to a check that only looks for the next successful flush; the
design's rule is stricter: a rejected post-step flush stops the turn before
another model request.

The oracle must report: DISPATCH_AFTER_FAILED_CHECKPOINT (G9).
Shows at: payment.toml step/logged#1 under io-error: the post-step flush
fails, and `request/durable` is reached for req-t0-s1 in the same turn.
"""

from __future__ import annotations

import contextlib
from typing import Any

from _common import edit_semantic_policy, run

from faultlab.runtime.host import AGENT_POST_STEP
from faultlab.runtime.persistence import FlushError, PersistenceCoordinator


def _ignoring(coordinator: PersistenceCoordinator) -> dict[str, Any]:
    async def post_step(_step: Any) -> None:
        with contextlib.suppress(FlushError):  # the bug: "best effort", the turn goes on
            await coordinator.flush()

    return {AGENT_POST_STEP: lambda _reference: post_step}


edit_semantic_policy(_ignoring)

if __name__ == "__main__":
    run()
