"""Black-box variant: the agent persists its session on a write-behind timer.

Bug imitated: asynchronous persistence. No semantic checkpoint flushes; an
append arms a timer and the log is written (and fsynced) ~300 ms later, with
everything appended meanwhile (only the end of a turn and a repair still
flush at once). A SIGKILL shortly after an event loses it: killed in the tool
body, the session on disk holds nothing of the turn, not even the user's
prompt, so the resumed model sees no charge and charges the card again.

The oracle must report: REQUEST_LOST and TOOL_INTENT_LOST (a request and a
call that reached the servers are missing from the resumed history) and
SIDE_EFFECT_DUPLICATED (G6).
Shows at: tool/applied@0 (and model/request@0); not at delays over ~300 ms.
"""

from __future__ import annotations

import asyncio
from typing import Any

from _common import run_httpagent

from faultlab.runtime import checkpoints
from faultlab.runtime.host import SESSION_APPENDED, Disposer, Host, Plugin
from faultlab.runtime.persistence import PersistenceCoordinator

DELAY_S = 0.3


def write_behind(coordinator: PersistenceCoordinator) -> Plugin:
    timer: list[asyncio.Task[Any]] = []

    async def later() -> None:
        await asyncio.sleep(DELAY_S)
        await coordinator.flush()

    async def on_append(_event: Any) -> None:
        if not timer or timer[-1].done():
            timer.append(asyncio.get_running_loop().create_task(later()))

    def install(host: Host) -> Disposer:
        return host.on(SESSION_APPENDED, on_append)

    return install


checkpoints.POLICIES["semantic"] = write_behind

if __name__ == "__main__":
    run_httpagent()
