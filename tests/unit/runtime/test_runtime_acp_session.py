# One ACP session's ordered composition, in process (real files and fsync,
# no client: updates are collected from the send callback): shutdown unloads
# the bridge first, lets the running turn persist its real step/end and
# turn/end {cancelled} (still shown to the client), then removes the client
# updates, the policy and persistence.
from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import orjson
import pytest

from faultlab.runtime.acp.session import AcpSession, SessionClosed
from faultlab.scenario import load_scenario

SCENARIO = Path(__file__).resolve().parents[2] / "scenarios" / "acp-two-inflight.toml"


async def _shutdown_mid_turn(directory: Path) -> tuple[AcpSession, str, list[Any]]:
    shown: list[Any] = []
    session = AcpSession(load_scenario(SCENARIO), directory, session_id="s1", policy=None,
                         send=shown.append, say=lambda _text: None)  # fmt: skip
    await session.open(resume=False)
    prompt = asyncio.ensure_future(session.prompt("go"))
    # Until both reads' bodies run: "in_progress" is shown when a call is
    # logged, before its checkpoint's flush and the cancellation check after
    # it, so a close in between (a slow fsync) would rightly abort it.
    assert session._tools is not None
    while len(session._tools.started) < 2:
        await asyncio.sleep(0.005)
    await session.close()
    return session, await prompt, shown


def test_shutdown_unloads_in_order_and_persists_the_real_closing_events(tmp_path: Path) -> None:
    session, reason, shown = asyncio.run(_shutdown_mid_turn(tmp_path))
    assert reason == "cancelled"
    assert session.app.unloaded == ["acp-bridge", "client-updates", "policy", "persistence"]
    lines = [orjson.loads(line) for line in (tmp_path / "session.jsonl").read_bytes().splitlines()]
    tail = [(e["type"], e["data"].get("reason")) for e in lines[-2:]]
    assert tail == [("step/end", None), ("turn/end", {"kind": "cancelled"})]
    # The results that closed the turn were still shown to the client.
    finals = [u.status for u in shown if getattr(u, "session_update", "") == "tool_call_update"
              and u.status != "in_progress"]  # fmt: skip
    assert finals == ["completed", "completed", "failed"]
    with pytest.raises(SessionClosed):
        asyncio.run(session.prompt("again"))
