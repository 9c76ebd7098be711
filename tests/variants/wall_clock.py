"""A runtime whose tool results depend on the wall clock.

Imitates a runtime (or tool) that stamps its output with the current time or
seeds its randomness from it: every tool result gets `` (seed N)`` appended,
N drawn from ``random.Random(time.time_ns())``.  Two runs of the same case
then leave different logs, so the lab's determinism check must report
``NONDETERMINISTIC``; a crash after a tool result also leaves a log that is
not a prefix of the reference run's (``LOG_NOT_PREFIX``), a failure that no
second run reproduces exactly.
"""

from __future__ import annotations

import dataclasses
import random
import time

from _common import run

from faultlab.runtime import tools

_original = tools.ScriptedTools.run


async def _stamped(self, call, dispatcher):  # type: ignore[no-untyped-def]
    result = await _original(self, call, dispatcher)
    seed = random.Random(time.time_ns()).randrange(10**9)
    return dataclasses.replace(result, content=f"{result.content} (seed {seed})")


tools.ScriptedTools.run = _stamped  # type: ignore[method-assign]

if __name__ == "__main__":
    run()
