# The contract can fail: run on a deliberately broken backend (one that stores
# a batch whatever its seqs, see contract_stores.GapAcceptingBackend), the
# suite's seq tests fail, while the tests that do not depend on seq checks
# still pass (so the failures are the gap, not a broken harness).
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def test_a_backend_that_accepts_a_seq_gap_fails_the_contract(tmp_path: Path) -> None:
    env = {**os.environ, "FAULTLAB_CONTRACT_BACKENDS": "broken-gap"}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", str(HERE / "test_backend_contract.py"), "-q",
         "-p", "no:xdist", "-p", "no:randomly", "--basetemp", str(tmp_path / "t"), "-rfE"],
        capture_output=True, text=True, timeout=300, env=env, cwd=HERE.parent.parent,
    )  # fmt: skip
    assert run.returncode == 1, run.stdout + run.stderr
    failed = set(re.findall(r"^FAILED \S+::(\S+)", run.stdout, re.MULTILINE))
    assert failed == {
        "test_append_rejects_a_batch_not_starting_at_the_next_seq[broken-gap]",
        "test_append_rejects_a_gap_inside_a_batch[broken-gap]",
    }, run.stdout
    assert re.search(r"\b1[0-9] passed\b", run.stdout), run.stdout
