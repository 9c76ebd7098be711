# The runtime as a real child process: SIGKILL while parked at a boundary
# (driven by the probe, never by sleeping), a fresh load and repair; SIGTERM
# for a graceful stop; resume of a session killed mid-tool; second writer.
from __future__ import annotations

import signal
import sys
from pathlib import Path
from typing import Any

import pytest

from faultlab.lab.process.spawn import Child
from faultlab.runtime.backends import JsonlBackend
from faultlab.runtime.backends.jsonl_format import read_log
from faultlab.runtime.ledger import WorldLedger
from faultlab.runtime.repair import plan_repair

REPO = Path(__file__).resolve().parents[2]
SCENARIOS = REPO / "scenarios"
pytestmark = pytest.mark.realprocess


def child(tmp_path: Path, scenario: str, armed: str | None, *extra: str) -> Child:
    argv = [
        sys.executable,
        "-m",
        "faultlab.runtime",
        str(SCENARIOS / scenario),
        "--session-dir",
        str(tmp_path / "session"),
        *extra,
    ]
    return Child(argv, stderr_path=tmp_path / f"stderr-{armed}.txt", armed=armed, cwd=str(REPO))


def kill_at(
    tmp_path: Path, scenario: str, armed: str
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    with child(tmp_path, scenario, armed) as target:
        parked = target.run_until_parked_or_exit(timeout=60)
        assert parked is not None, f"never reached {armed}: {target.trace}"
        target.kill()
        status = target.wait(timeout=30)
    assert status.returncode == -signal.SIGKILL
    return parked, target.trace


def load(tmp_path: Path) -> Any:
    return read_log((tmp_path / "session" / "session.jsonl").read_bytes(), "session.jsonl")


def test_sigkill_at_request_durable_keeps_the_envelope_that_reached_the_model(
    tmp_path: Path,
) -> None:
    parked, _trace = kill_at(tmp_path, "deploy-careful.toml", "request/durable#1")
    loaded = load(tmp_path)
    headers = [e for e in loaded.events if e.type == "request/header"]
    assert [h.data["requestId"] for h in headers] == [parked["requestId"]]
    assert headers[0].data["envelope"]["digest"] == parked["digest"]
    actions = plan_repair(loaded.events, lambda _name: False)
    assert [a.type for a in actions] == ["step/end", "turn/end"]


def test_sigkill_at_tool_durable_keeps_the_call_and_repairs_it_as_outcome_unknown(
    tmp_path: Path,
) -> None:
    parked, _trace = kill_at(tmp_path, "deploy-careful.toml", "tool/durable#1")
    loaded = load(tmp_path)
    calls = [e for e in loaded.events if e.type == "tool/call"]
    assert [c.data["callId"] for c in calls] == [parked["callId"]]
    actions = plan_repair(loaded.events, lambda name: name != "deploy")
    result = actions[0].data
    assert result["error"]["code"] == "TOOL_OUTCOME_UNKNOWN"
    assert result["sourceEventSeqs"] == [calls[0].seq] == [parked["seq"]]
    assert result["error"]["retry"] == "verify"
    assert WorldLedger(tmp_path / "session" / "world-ledger.jsonl").records == []


def test_calls_not_yet_checkpointed_repair_as_not_started(tmp_path: Path) -> None:
    # Two parallel reads are checkpointed together; the exclusive write and
    # the last read had not been dispatched when the child died.
    kill_at(tmp_path, "mixed-parallel.toml", "tool/durable#1")
    loaded = load(tmp_path)
    assert len([e for e in loaded.events if e.type == "tool/call"]) == 2
    actions = plan_repair(loaded.events, lambda _name: False)
    codes = [a.data["error"]["code"] for a in actions if "error" in a.data]
    assert codes == ["TOOL_OUTCOME_UNKNOWN"] * 2 + ["TOOL_NOT_STARTED"] * 2


def test_resume_after_a_kill_mid_tool_repairs_and_the_careful_model_verifies(
    tmp_path: Path,
) -> None:
    kill_at(tmp_path, "deploy-careful.toml", "tool/effect#1")
    with child(tmp_path, "deploy-careful.toml", None, "--resume") as resumed:
        assert resumed.run_until_parked_or_exit(timeout=60) is None
        status = resumed.wait(timeout=30)
    assert status.returncode == 0, status.stderr
    events = load(tmp_path).events
    codes = [
        e.data["error"]["code"] for e in events if e.type == "tool/result" and "error" in e.data
    ]
    assert codes == ["TOOL_OUTCOME_UNKNOWN"]
    ends = [e.data["reason"]["kind"] for e in events if e.type == "turn/end"]
    assert ends == ["interrupted", "completed"]
    called = [e.data["name"] for e in events if e.type == "tool/call"]
    assert called == ["deploy", "deploy_status"]  # verified instead of deploying again
    ledger = WorldLedger(tmp_path / "session" / "world-ledger.jsonl")
    assert ledger.count("deploy") == 1
    assert "repair: appended 3 event(s)" in status.stderr


@pytest.mark.parametrize("armed", ["tool/logged#1", "model/chunk#2"])
def test_sigterm_persists_the_real_closing_events_and_leaves_nothing_to_repair(
    tmp_path: Path, armed: str
) -> None:
    with child(tmp_path, "deploy-careful.toml", armed) as target:
        assert target.run_until_parked_or_exit(timeout=60) is not None
        target.signal(signal.SIGTERM)
        target.reply("continue")
        status = target.wait(timeout=30)
    assert status.returncode == 7, status.stderr
    loaded = load(tmp_path)
    assert loaded.cut_bytes == 0
    last = loaded.events[-2:]
    assert [e.type for e in last] == ["step/end", "turn/end"]
    assert last[1].data["reason"] == {"kind": "cancelled"}
    assert plan_repair(loaded.events, lambda _name: False) == []
    assert WorldLedger(tmp_path / "session" / "world-ledger.jsonl").records == []
    if armed.startswith("tool/"):
        result = next(e for e in loaded.events if e.type == "tool/result")
        assert result.data["error"]["code"] == "ABORTED_BEFORE_DISPATCH"


def test_a_second_writer_on_a_live_session_is_refused(tmp_path: Path) -> None:
    with child(tmp_path, "payment.toml", "tool/durable#1") as first:
        assert first.run_until_parked_or_exit(timeout=60) is not None
        with child(tmp_path, "payment.toml", None, "--resume") as second:
            assert second.run_until_parked_or_exit(timeout=60) is None
            refused = second.wait(timeout=30)
        before = (tmp_path / "session" / "session.jsonl").read_bytes()
        first.reply("continue")
        done = first.wait(timeout=30)
    assert refused.returncode == 5
    assert "locked by another live writer" in refused.stderr
    assert done.returncode == 0
    events = read_log((tmp_path / "session" / "session.jsonl").read_bytes(), "s").events
    assert [e.seq for e in events] == list(range(len(events)))
    assert (tmp_path / "session" / "session.jsonl").read_bytes().startswith(before)


def test_the_child_exits_when_its_lab_goes_away(tmp_path: Path) -> None:
    target = child(tmp_path, "payment.toml", "tool/durable#1")
    target.start()
    assert target.run_until_parked_or_exit(timeout=60) is not None
    target.close()  # the lab's pipe ends vanish, as if the lab died
    status = target.wait(timeout=30)
    assert status.returncode == 70
    JsonlBackend(tmp_path / "session").open(session_id=None, create=False, resume=True)
