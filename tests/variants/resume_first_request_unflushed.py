"""Variant: a resumed session sends its first request before it is durable.

Bug imitated: on --resume, the request checkpoint skips its flush for the
first model request ("the history was just loaded from disk, so it is
durable"), forgetting the `request/header` the resumed step has just
appended. The request reaches the model with its envelope only in memory;
the next checkpoint (the tool checkpoint, or the post-step one) writes it.
A fresh run is checkpointed, and a resume that is not crashed ends with a
complete log, so every single-crash case passes.

The oracle must report: REQUEST_ENVELOPE_LOST (G1).
Shows at: payment.toml turn/started#1+model/chunk#1 [double-sigkill]: the
resumed child is killed while the model streams its reply, the log it left
has no request/header for the request it sent; and under power-loss, at
the first flush of a resumed child that made a request (the power loss at
its flush/written leaves the header unsynced).
"""

from __future__ import annotations

import sys
from typing import Any

from _common import edit_semantic_policy, run

from faultlab.runtime.host import LLM_STREAM, Next


def _first_unflushed(checkpoint: Any) -> Any:
    sent = 0

    async def request_checkpoint(request: Any, next_: Next) -> Any:
        nonlocal sent
        sent += 1
        if sent == 1:  # the bug: "the resumed history is already on disk"
            return await next_(request)
        return await checkpoint(request, next_)

    return request_checkpoint


if "--resume" in sys.argv[1:]:
    edit_semantic_policy(lambda _coordinator: {LLM_STREAM: _first_unflushed})

if __name__ == "__main__":
    run()
