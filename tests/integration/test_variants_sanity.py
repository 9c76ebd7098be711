# The deliberately broken runtime variants (tests/variants/) as real child
# processes: each still runs a bundled scenario to completion (the lab must
# not catch it by accident with a crash), and each shows its bug at one kill
# point, observed directly in the log and the world ledger after SIGKILL and
# resume.  These checks do not use the lab's oracle: they make sure the
# variants the oracle is tested against are really broken, and broken in the
# way their docstrings say.
from __future__ import annotations

import itertools
import signal
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from faultlab.lab.process.spawn import Child, ChildExit
from faultlab.runtime.backends.base import SessionCorruptError
from faultlab.runtime.backends.jsonl_format import read_log
from faultlab.runtime.events import Event
from faultlab.scenario import load_scenario

REPO = Path(__file__).resolve().parents[2]
SCENARIOS = REPO / "scenarios"
VARIANTS = REPO / "tests" / "variants"
pytestmark = pytest.mark.realprocess

# variant -> a bundled scenario it must run to completion
COMPLETES = {
    "no_request_checkpoint": "chat.toml",
    "tool_checkpoint_after_body": "payment.toml",
    "repair_swaps_classes": "mixed-parallel.toml",
    "fsync_without_flush": "multi-turn.toml",
    "compaction_on_resume": "chat.toml",
    "repair_says_safe": "deploy-careful.toml",
    "resume_reruns_tools": "nested.toml",
    "repair_leaves_calls_dangling": "parallel-reads.toml",
    "repair_not_idempotent": "idempotent-key.toml",
    "never_fsyncs": "multi-turn.toml",
    "ignores_failed_flush": "payment.toml",
    "dies_on_sigterm": "chat.toml",
    "no_cancel_recheck": "mixed-parallel.toml",
    "no_writer_lock": "nested.toml",
    "torn_batch_no_truncate": "parallel-reads.toml",
    "request_checkpoint_after_stream": "chat.toml",
    "no_parallel_checkpoint": "parallel-reads.toml",
    "repair_all_not_started": "payment.toml",
    "repair_drops_guidance": "deploy-careful.toml",
    "repair_closes_twice": "nested.toml",
    "loader_drops_corrupt_line": "chat.toml",
    "concurrent_flushes": "multi-turn.toml",  # no parallel calls: no overlap, a clean log
    "ignores_post_step_failure": "payment.toml",
    "no_turn_end_flush": "multi-turn.toml",
    "trusts_retried_fsync": "payment.toml",
    "resume_skips_checkpoints": "payment.toml",
    # issue 19, the missing claims
    "no_post_step_checkpoint": "payment.toml",
    "sigterm_drops_results": "payment.toml",
    "refused_writer_truncates_lock": "payment.toml",
    "refused_writer_unlinks_lock": "payment.toml",
    "turn_counter_from_completed": "multi-turn.toml",
    "request_id_per_step": "multi-turn.toml",
    "cut_tail_discarded": "chat.toml",
    "repair_ignores_nested": "nested-parallel.toml",
    "no_boundaries": "chat.toml",
    "no_tool_boundaries": "payment.toml",
    "resume_retries_unknown": "payment.toml",
    "fsync_wrong_fd": "payment.toml",
    "reports_unmade_fsync": "multi-turn.toml",
    "temp_log_not_fsynced": "chat.toml",
    "reports_unmade_dirsync": "payment.toml",
    # issue 30, the recovery path's own bugs (a fresh run is right: each completes)
    "repair_commit_unflushed": "payment.toml",
    "cut_before_keep": "chat.toml",
    "keyed_tool_called_safe": "annotations.toml",
    "resume_first_request_unflushed": "payment.toml",
    "recovery_reports_unmade_fsync": "multi-turn.toml",
}
# SQLite backend variants: run with --backend sqlite
COMPLETES_SQLITE = {
    "sqlite_no_writer_lock": "payment.toml",
    "sqlite_commit_on_close": "chat.toml",
    "sqlite_synchronous_off": "chat.toml",
}
_runs = itertools.count()


def variant(
    tmp_path: Path, name: str, scenario: str, armed: str | None = None, *extra: str
) -> Child:
    argv = [
        sys.executable,
        str(VARIANTS / f"{name}.py"),
        str(SCENARIOS / scenario),
        "--session-dir",
        str(tmp_path / "session"),
        *extra,
    ]
    # Run from an unrelated cwd: a variant must find the repository itself.
    stderr = tmp_path / f"stderr-{next(_runs)}.txt"
    return Child(argv, stderr_path=stderr, armed=armed, cwd=str(tmp_path))


def kill_at(
    tmp_path: Path, name: str, scenario: str, armed: str, *extra: str
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    with variant(tmp_path, name, scenario, armed, *extra) as target:
        parked = target.run_until_parked_or_exit(timeout=60)
        assert parked is not None, f"never reached {armed}: {target.trace}"
        target.kill()
        status = target.wait(timeout=30)
    assert status.returncode == -signal.SIGKILL, status.stderr
    return parked, target.trace


def resume(tmp_path: Path, name: str, scenario: str) -> ChildExit:
    with variant(tmp_path, name, scenario, None, "--resume") as target:
        assert target.run_until_parked_or_exit(timeout=60) is None
        status = target.wait(timeout=30)
    assert status.returncode == 0, status.stderr
    return status


def events(tmp_path: Path) -> tuple[Event, ...]:
    data = (tmp_path / "session" / "session.jsonl").read_bytes()
    return read_log(data, "session.jsonl").events


def ledger(tmp_path: Path) -> list[dict[str, Any]]:
    path = tmp_path / "session" / "world-ledger.jsonl"
    if not path.exists():
        return []
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def results(log: tuple[Event, ...], call_id: str) -> list[dict[str, Any]]:
    return [e.data for e in log if e.type == "tool/result" and e.data["callId"] == call_id]


def test_every_guarantee_variant_is_covered() -> None:
    # Variants of a guarantee name their code as "The oracle must report:";
    # other targets here (a hung or nondeterministic runtime) test the lab itself.
    # ACP agents (acp_*) are not classic targets: their fault-free ACP run must
    # complete, which tests/integration/test_acp_drive.py asserts.  Black-box
    # agents (bb_*) neither: tests/integration/test_httpagent.py drives them.
    scripts = {
        p.stem
        for p in VARIANTS.glob("*.py")
        if not p.name.startswith(("_", "acp_", "bb_"))
        and "The oracle must report:" in p.read_text()
    }
    assert scripts == set(COMPLETES) | set(COMPLETES_SQLITE)


@pytest.mark.parametrize("name", sorted(COMPLETES))
def test_variant_runs_a_bundled_scenario_to_completion(tmp_path: Path, name: str) -> None:
    scenario = COMPLETES[name]
    with variant(tmp_path, name, scenario) as target:
        assert target.run_until_parked_or_exit(timeout=60) is None
        status = target.wait(timeout=30)
    assert status.returncode == 0, status.stderr
    assert "done:" in status.stderr and "Traceback" not in status.stderr
    ends = [e.data["reason"]["kind"] for e in events(tmp_path) if e.type == "turn/end"]
    assert ends == ["completed"] * len(load_scenario(SCENARIOS / scenario).turns)
    reported = any(m.get("boundary") == "turn/durable" for m in target.trace)
    # no_boundaries' bug is exactly that it reports none (its run still completes).
    assert reported is (name != "no_boundaries")


def test_no_request_checkpoint_calls_the_model_with_no_durable_header(tmp_path: Path) -> None:
    parked, trace = kill_at(tmp_path, "no_request_checkpoint", "chat.toml", "model/chunk#1")
    reached = [m for m in trace if m.get("boundary") == "request/durable"]
    assert [m["requestId"] for m in reached] == [parked["requestId"]] == ["req-t0-s0"]
    assert not [e for e in events(tmp_path) if e.type == "request/header"]


def test_tool_checkpoint_after_body_applies_an_effect_with_no_durable_call(
    tmp_path: Path,
) -> None:
    parked, _ = kill_at(tmp_path, "tool_checkpoint_after_body", "payment.toml", "tool/effect#1")
    assert [r["callId"] for r in ledger(tmp_path)] == [parked["callId"]]
    assert not [e for e in events(tmp_path) if e.type == "tool/call"]


def test_repair_swaps_classes_misclassifies_both_ways(tmp_path: Path) -> None:
    # Two parallel reads are durable; the write and the last read never started.
    kill_at(tmp_path, "repair_swaps_classes", "mixed-parallel.toml", "tool/durable#1")
    resume(tmp_path, "repair_swaps_classes", "mixed-parallel.toml")
    log = events(tmp_path)
    durable = {e.data["callId"] for e in log if e.type == "tool/call"}
    assert durable == {"call-t0-s0-0", "call-t0-s0-1"}
    for index in range(4):
        call_id = f"call-t0-s0-{index}"
        (result,) = results(log, call_id)
        wrong = "TOOL_NOT_STARTED" if call_id in durable else "TOOL_OUTCOME_UNKNOWN"
        assert result["error"]["code"] == wrong


def test_fsync_without_flush_loses_a_turn_reported_durable(tmp_path: Path) -> None:
    _, trace = kill_at(tmp_path, "fsync_without_flush", "chat.toml", "turn/durable#1")
    flushed = [m for m in trace if m.get("fact") == "flush"]
    assert flushed and all(m["ok"] for m in flushed)
    claimed = max(m["last"] for m in flushed) + 1  # events reported durable
    fsynced = max(m["size"] for m in trace if m.get("fact") == "fsync")
    assert claimed > 10
    assert events(tmp_path) == ()  # the file holds the header only
    assert (tmp_path / "session" / "session.jsonl").stat().st_size < fsynced


def test_trusts_retried_fsync_carries_on_after_a_failed_fsync(tmp_path: Path) -> None:
    with variant(tmp_path, "trusts_retried_fsync", "payment.toml", "tool/logged#1") as target:
        parked = target.run_until_parked_or_exit(timeout=60)
        assert parked is not None
        target.reply("fail-next-flush", op="sync", errno="EIO")
        target.reply("continue")
        while target.run_until_parked_or_exit(timeout=60) is not None:
            target.reply("continue")
        status = target.wait(timeout=30)
    assert status.returncode == 0, status.stderr
    after = target.trace[next(i for i, m in enumerate(target.trace) if m.get("parked")) :]
    facts = [m["fact"] for m in after if "fact" in m]
    # the failed fsync left no trace: no fsync-failed, no truncate, every flush ok
    assert "fsync-failed" not in facts and "truncate" not in facts
    assert all(m["ok"] for m in after if m.get("fact") == "flush")
    # and the tool body ran on top of the bytes whose fsync failed
    assert [m["callId"] for m in after if m.get("boundary") == "tool/durable"] == [
        parked["callId"]
    ]


def test_compaction_on_resume_rewrites_durable_history(tmp_path: Path) -> None:
    kill_at(tmp_path, "compaction_on_resume", "chat.toml", "step/durable#1")
    before = [(e.seq, e.type) for e in events(tmp_path)]
    assert "assistant/chunk" in {t for _, t in before}
    resume(tmp_path, "compaction_on_resume", "chat.toml")
    after = [(e.seq, e.type) for e in events(tmp_path)]
    assert after[: len(before)] != before
    assert after[4] == (4, "assistant/message")  # was a chunk's seq


def test_repair_says_safe_for_a_non_idempotent_charge(tmp_path: Path) -> None:
    spec = next(t for t in load_scenario(SCENARIOS / "payment.toml").tools)
    assert spec.name == "charge_card" and not (spec.read_only or spec.idempotent)
    parked, _ = kill_at(tmp_path, "repair_says_safe", "payment.toml", "tool/durable#1")
    resume(tmp_path, "repair_says_safe", "payment.toml")
    (result,) = results(events(tmp_path), parked["callId"])
    assert result["error"]["code"] == "TOOL_OUTCOME_UNKNOWN"
    assert result["error"]["retry"] == "safe"
    assert "safe to call it again" in result["content"]


def test_resume_reruns_tools_applies_a_charge_twice(tmp_path: Path) -> None:
    parked, _ = kill_at(tmp_path, "resume_reruns_tools", "payment.toml", "tool/effect#1")
    resume(tmp_path, "resume_reruns_tools", "payment.toml")
    assert [r["callId"] for r in ledger(tmp_path)] == [parked["callId"]] * 2
    (result,) = results(events(tmp_path), parked["callId"])
    assert not result["isError"] and "synthetic" not in result


def test_repair_leaves_calls_dangling_never_answers_the_call(tmp_path: Path) -> None:
    parked, _ = kill_at(tmp_path, "repair_leaves_calls_dangling", "payment.toml", "tool/durable#1")
    status = resume(tmp_path, "repair_leaves_calls_dangling", "payment.toml")
    assert "repair: appended 2 event(s)" in status.stderr
    log = events(tmp_path)
    assert [e.data["callId"] for e in log if e.type == "tool/call"] == [parked["callId"]]
    assert results(log, parked["callId"]) == []
    ends = [e.data["reason"]["kind"] for e in log if e.type == "turn/end"]
    assert ends == ["interrupted", "completed"]


def test_repair_not_idempotent_closes_a_repaired_turn_again(tmp_path: Path) -> None:
    kill_at(tmp_path, "repair_not_idempotent", "payment.toml", "tool/durable#1")
    # Crash in repair: the resumed child dies right after its repair is durable.
    kill_at(tmp_path, "repair_not_idempotent", "payment.toml", "repair/durable#1", "--resume")
    repaired = events(tmp_path)
    assert repaired[-1].type == "turn/end"
    resume(tmp_path, "repair_not_idempotent", "payment.toml")
    log = events(tmp_path)
    assert log[: len(repaired)] == repaired
    again = log[len(repaired)]
    assert again.type == "turn/end" and again.data == repaired[-1].data


def test_never_fsyncs_reports_flushes_done_without_any_fsync(tmp_path: Path) -> None:
    parked, trace = kill_at(tmp_path, "never_fsyncs", "payment.toml", "flush/written#3")
    facts = [m["fact"] for m in trace if "fact" in m]
    assert "fsync" not in facts and facts.count("write") == 3
    assert [m["last"] for m in trace if m.get("fact") == "flush" and m["ok"]] == [3, 8]
    # The page cache survives a SIGKILL: everything written is in the file.
    assert [e.seq for e in events(tmp_path)] == list(range(11))
    assert parked["size"] == (tmp_path / "session" / "session.jsonl").stat().st_size


@pytest.mark.parametrize("name", sorted(COMPLETES_SQLITE))
def test_sqlite_variant_runs_a_bundled_scenario_to_completion(tmp_path: Path, name: str) -> None:
    from faultlab.runtime.backends.sqlite import SqliteBackend

    scenario = COMPLETES_SQLITE[name]
    with variant(tmp_path, name, scenario, None, "--backend", "sqlite") as target:
        assert target.run_until_parked_or_exit(timeout=60) is None
        status = target.wait(timeout=30)
    assert status.returncode == 0, status.stderr
    stored = SqliteBackend(tmp_path / "session").load().events
    ends = [e.data["reason"]["kind"] for e in stored if e.type == "turn/end"]
    assert ends == ["completed"] * len(load_scenario(SCENARIOS / scenario).turns)


def test_concurrent_flushes_write_the_same_seqs_twice_without_a_crash(tmp_path: Path) -> None:
    with variant(tmp_path, "concurrent_flushes", "parallel-reads.toml") as target:
        assert target.run_until_parked_or_exit(timeout=60) is None
        status = target.wait(timeout=30)
    assert status.returncode == 0, status.stderr
    data = (tmp_path / "session" / "session.jsonl").read_bytes()
    seqs = [orjson.loads(line)["seq"] for line in data.splitlines()[1:]]
    assert len(seqs) > len(set(seqs))  # the overlapping batches are both on disk
    with pytest.raises(SessionCorruptError, match="seq duplicate"):
        read_log(data, "session.jsonl")


def test_no_turn_end_flush_leaves_a_finished_turn_open_on_disk(tmp_path: Path) -> None:
    _parked, trace = kill_at(tmp_path, "no_turn_end_flush", "multi-turn.toml", "turn/started#2")
    assert [m["turn"] for m in trace if m.get("boundary") == "turn/durable"] == [0]
    assert [e.type for e in events(tmp_path)][-1] == "step/end"  # turn 0's turn/end is lost
