# The io-error family with real processes, real files and real fsync: the
# write or the fsync of the next flush fails, with EIO or ENOSPC.  The
# reference runtime fails closed and never takes the bytes of a failed fsync
# for durable (it cuts them off and writes them again), on JSONL and SQLite and
# under every policy; a runtime that retries a failed fsync and trusts its
# success (tests/variants/trusts_retried_fsync.py, fsyncgate) is caught by the
# fsync faults with FSYNC_FAILURE_TRUSTED, and is invisible to the write ones.
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from faultlab import lab
from faultlab.lab.faults.ioerror import IO_FAULTS

ROOT = Path(__file__).resolve().parents[2]
PAYMENT = str(ROOT / "scenarios" / "payment.toml")
TINY_TOOL = str(ROOT / "tests" / "scenarios" / "tiny-tool.toml")
TINY_SQLITE = str(ROOT / "tests" / "scenarios" / "tiny-sqlite.toml")
TRUSTING = [sys.executable, str(ROOT / "tests" / "variants" / "trusts_retried_fsync.py")]
FSYNC_FAULTS = ("fsync-error", "fsync-enospc")
pytestmark = pytest.mark.realprocess


def _trace(result: lab.CaseResult) -> list[dict[str, object]]:
    text = Path(result.artifacts["trace"]).read_text()
    return [json.loads(line) for line in text.splitlines()]


@pytest.mark.parametrize("fault", FSYNC_FAULTS)
def test_the_reference_cuts_off_what_a_failed_fsync_wrote(tmp_path: Path, fault: str) -> None:
    result = lab.run_single(PAYMENT, "tool/logged#1", fault=fault, workdir=tmp_path)
    assert result.verdict == "pass", [v.message for v in result.violations]
    facts = [m for m in _trace(result) if "fact" in m]
    failed = next(i for i, m in enumerate(facts) if m["fact"] == "fsync-failed")
    assert facts[failed]["error"].startswith(
        "Input/output error" if fault == "fsync-error" else "No space left on device"
    )
    # the failed flush cuts its bytes off, never retries the fsync on them
    assert facts[failed + 1]["fact"] == "truncate"
    assert facts[failed + 2] == {**facts[failed + 2], "fact": "flush", "ok": False}


def test_every_io_fault_passes_on_the_reference_runtime(tmp_path: Path) -> None:
    result = lab.explore_paths([PAYMENT, TINY_SQLITE], faults=tuple(IO_FAULTS), jobs=2,
                               workdir=tmp_path)  # fmt: skip
    ran = [r for r in result.results if r.case.fault in IO_FAULTS]
    assert {r.case.fault for r in ran} == set(IO_FAULTS)
    assert len(ran) == 4 * 12  # payment 7 + tiny-sqlite 5, for each of the four faults
    assert [(r.case.id, r.codes) for r in result.results if not r.passed] == []


@pytest.mark.parametrize("policy", ["every-event", "turn-only"])
def test_no_io_case_where_no_flush_follows(tmp_path: Path, policy: str) -> None:
    # every-event flushes turn/end before turn/logged: nothing is left to fail
    # there, and the case used to fail FAULT_NOT_INJECTED.
    result = lab.explore_paths([TINY_TOOL], faults=tuple(IO_FAULTS), jobs=2, policy=policy,
                               workdir=tmp_path)  # fmt: skip
    ids = [r.case.id for r in result.results if r.case.fault in IO_FAULTS]
    assert ids, "no io case at all"
    if policy == "every-event":
        assert not [i for i in ids if "turn/logged#1[" in i]
    else:
        assert [i for i in ids if "turn/logged#1[" in i]  # turn-only flushes after it
    assert [(r.case.id, r.codes) for r in result.results if not r.passed] == []


@pytest.mark.parametrize("fault", FSYNC_FAULTS)
@pytest.mark.parametrize("at", ["request/logged#1", "tool/logged#1", "step/logged#1",
                                "turn/logged#1"])  # fmt: skip
def test_trusting_a_retried_fsync_is_caught(tmp_path: Path, at: str, fault: str) -> None:
    result = lab.run_single(PAYMENT, at, fault=fault, target=TRUSTING, workdir=tmp_path)
    assert result.verdict == "fail"
    assert "FSYNC_FAILURE_TRUSTED" in result.codes, [v.message for v in result.violations]
    after_run = [v for v in result.violations if v.evidence.get("state") == "after-run"]
    assert after_run, "a power loss after the run loses what the flushes claimed"
    if at != "turn/logged#1":  # the last flush: nothing is dispatched after it
        assert "DISPATCH_AFTER_FAILED_CHECKPOINT" in result.codes


def test_trusting_a_retried_fsync_is_invisible_to_write_failures(tmp_path: Path) -> None:
    for fault in ("io-error", "io-error-enospc"):
        result = lab.run_single(PAYMENT, "tool/logged#1", fault=fault, target=TRUSTING,
                                workdir=tmp_path / fault)  # fmt: skip
        assert result.verdict == "pass", [v.message for v in result.violations]
