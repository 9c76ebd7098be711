"""A runtime whose tool calls run in another order when it is being crashed.

Imitates a runtime whose log depends on timing (a thread pool, unseeded
randomness): the armed crash run dispatches a step's calls in reverse order,
the fault-free reference run does not.  Crash cases then reach their kill
point in another state than the reference, and the lab must report
``DRIFT``, never a pass.
"""

from __future__ import annotations

import os

from _common import run

from faultlab.probe import ENV_ARM
from faultlab.runtime import dispatch

_original = dispatch.ToolDispatcher.dispatch_step


async def _reordered(self, turn, step, message_seq, calls):  # type: ignore[no-untyped-def]
    if os.environ.get(ENV_ARM):
        calls = list(reversed(calls))
    return await _original(self, turn, step, message_seq, calls)


dispatch.ToolDispatcher.dispatch_step = _reordered  # type: ignore[method-assign]

if __name__ == "__main__":
    run()
