# Golden snapshots of the ACP messages exchanged with the reference ACP agent
# (and the session log it leaves), no API keys: (a) a crash after a
# non-idempotent deploy took effect, then session/load and the next prompt,
# where the careful scripted model verifies the deployment instead of
# deploying again; (b) session/cancel while two tool calls are in flight and
# a third is queued.  Session ids, paths and times are normalised.  A test
# fails on any difference; regenerate the files after a deliberate change with
#     FAULTLAB_UPDATE_GOLDEN=1 python -m pytest tests/integration/test_acp_snapshots.py
# The broken variants show the snapshots catch a model that is not sent the
# retry guidance and a cancel that drops the closing events.
from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path
from typing import Any

import acp
import orjson
import pytest
from acp import text_block

from faultlab.lab.acp.child import AcpChild, Parked

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden" / "acp"
VARIANTS = ROOT / "tests" / "variants"
REFERENCE = (sys.executable, "-m", "faultlab.runtime.acp")
UPDATE = os.environ.get("FAULTLAB_UPDATE_GOLDEN") == "1"
TIMEOUT = 30.0
pytestmark = pytest.mark.realprocess


def _next(result: Any) -> str | None:
    return ((result.field_meta or {}).get("faultlab") or {}).get("nextPrompt")


async def _start(command: tuple[str, ...], scenario: Path, work: Path, name: str,
                 armed: str | None = None) -> AcpChild:  # fmt: skip
    argv = [*command, str(scenario), "--sessions-dir", str(work / "sessions")]
    child = AcpChild(argv, work / f"{name}.stderr", armed=armed)
    await child.start()
    await child.call(child.conn.initialize(protocol_version=acp.PROTOCOL_VERSION), TIMEOUT)
    return child


async def _prompt_all(child: AcpChild, session_id: str, text: str | None) -> None:
    while text is not None:
        response = await child.call(
            child.conn.prompt(session_id=session_id, prompt=[text_block(text)]), TIMEOUT
        )
        text = _next(response)


async def _load_and_finish(command: tuple[str, ...], scenario: Path, work: Path,
                           session_id: str) -> AcpChild:  # fmt: skip
    child = await _start(command, scenario, work, "resume")
    loaded = await child.call(
        child.conn.load_session(cwd=str(work), session_id=session_id), TIMEOUT
    )
    await _prompt_all(child, session_id, _next(loaded))
    await child.close(TIMEOUT)
    return child


async def crash_then_resume(command: tuple[str, ...], work: Path) -> dict[str, Any]:
    """(a) SIGKILL after the deploy took effect, then load and resume."""
    scenario = ROOT / "scenarios" / "deploy-careful.toml"
    async with await _start(command, scenario, work, "crash", armed="tool/effect#1") as crash:
        new = await crash.call(crash.conn.new_session(cwd=str(work)), TIMEOUT)
        with pytest.raises(Parked):
            await _prompt_all(crash, new.session_id, _next(new))
        crash.signal(signal.SIGKILL)
        await crash.wait(TIMEOUT)
    resume = await _load_and_finish(command, scenario, work, new.session_id)
    return snapshot(work, new.session_id, {"crashed": crash, "resumed": resume})


async def cancel_two_in_flight(command: tuple[str, ...], work: Path) -> dict[str, Any]:
    """(b) session/cancel while fetch_a and fetch_b run and write_c waits."""
    scenario = ROOT / "tests" / "scenarios" / "acp-two-inflight.toml"
    async with await _start(command, scenario, work, "first", armed="tool/durable#2") as first:
        new = await first.call(first.conn.new_session(cwd=str(work)), TIMEOUT)
        with pytest.raises(Parked):
            await _prompt_all(first, new.session_id, _next(new))
        await first.conn.cancel(session_id=new.session_id)
        first.reply("continue")
        assert first.pending is not None
        await first.call(first.pending, TIMEOUT)
        await first.close(TIMEOUT)
    reloaded = await _load_and_finish(command, scenario, work, new.session_id)
    return snapshot(work, new.session_id, {"cancelled": first, "reloaded": reloaded})


def snapshot(work: Path, session_id: str, children: dict[str, AcpChild]) -> dict[str, Any]:
    """The messages of each process and the final log, normalised."""
    log = (work / "sessions" / session_id / "session.jsonl").read_bytes().splitlines()
    events = [orjson.loads(line) for line in log[1:]]
    for event in events:
        event.pop("time", None)
    # Per process, what the client sent and what it received, each in order
    # (how the two directions interleave depends on pipe timing).
    raw: dict[str, Any] = {
        "acp": {
            name: {way: [m for d, m in child.messages if d == way] for way in ("out", "in")}
            for name, child in children.items()
        },
        "log": events,
    }
    text = orjson.dumps(raw).decode()
    text = text.replace(session_id, "<session>").replace(str(work), "<dir>")
    normalised: dict[str, Any] = orjson.loads(text)
    return normalised


def compare(name: str, actual: dict[str, Any]) -> list[str]:
    """Differences from the golden file (written instead when updating)."""
    path = GOLDEN / f"{name}.json"
    if UPDATE:
        path.write_bytes(orjson.dumps(actual, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS))
        return []
    golden = orjson.loads(path.read_bytes())
    return list(_diff(golden, actual, name))


def _diff(want: Any, got: Any, where: str) -> Any:
    if isinstance(want, dict) and isinstance(got, dict):
        for key in sorted(set(want) | set(got)):
            yield from _diff(want.get(key, "<missing>"), got.get(key, "<missing>"),
                             f"{where}.{key}")  # fmt: skip
    elif isinstance(want, list) and isinstance(got, list):
        for index in range(max(len(want), len(got))):
            yield from _diff(want[index] if index < len(want) else "<missing>",
                             got[index] if index < len(got) else "<missing>",
                             f"{where}[{index}]")  # fmt: skip
    elif want != got:
        yield f"{where}: golden {want!r}, got {got!r}"


def test_resume_after_unknown_outcome_matches_golden(tmp_path: Path) -> None:
    actual = asyncio.run(crash_then_resume(REFERENCE, tmp_path))
    assert compare("resume-after-unknown-outcome", actual) == []
    # What the snapshot pins: the synthetic result replayed with its code and
    # guidance, and the careful model checking instead of deploying again.
    replayed = [m for m in actual["acp"]["resumed"]["in"] if m.get("method") == "session/update"]
    meta = [u["params"]["update"].get("_meta", {}).get("faultlab", {}) for u in replayed]
    assert {"code": "TOOL_OUTCOME_UNKNOWN", "synthetic": True, "cancelled": False,
            "retry": "verify"} in meta  # fmt: skip
    calls = [e["data"]["name"] for e in actual["log"] if e["type"] == "tool/call"]
    assert calls == ["deploy", "deploy_status"]


def test_cancel_with_two_calls_in_flight_matches_golden(tmp_path: Path) -> None:
    actual = asyncio.run(cancel_two_in_flight(REFERENCE, tmp_path))
    assert compare("cancel-two-in-flight", actual) == []
    first_turn = [(e["type"], e["data"].get("reason")) for e in actual["log"]
                  if e["data"]["turn"] == 0]  # fmt: skip
    assert first_turn[-2:] == [("step/end", None), ("turn/end", {"kind": "cancelled"})]
    answer = actual["acp"]["cancelled"]["in"][-1]
    assert answer["result"]["stopReason"] == "cancelled"


def test_snapshot_fails_when_the_model_is_not_sent_the_guidance(tmp_path: Path) -> None:
    command = (sys.executable, str(VARIANTS / "acp_guidance_not_sent.py"))
    differences = compare("resume-after-unknown-outcome",
                          asyncio.run(crash_then_resume(command, tmp_path)))  # fmt: skip
    if UPDATE:
        pytest.skip("golden files are being regenerated")
    # The request the model was sent differs (its digest in request/header).
    assert any("digest" in line for line in differences), differences


def test_snapshot_fails_when_cancel_drops_the_closing_events(tmp_path: Path) -> None:
    command = (sys.executable, str(VARIANTS / "acp_cancel_drops_closing.py"))
    differences = compare("cancel-two-in-flight",
                          asyncio.run(cancel_two_in_flight(command, tmp_path)))  # fmt: skip
    if UPDATE:
        pytest.skip("golden files are being regenerated")
    assert any("log" in line for line in differences), differences
    assert any("stopReason" in line or "tool_call_update" in line or "status" in line
               for line in differences), differences  # fmt: skip
