# The black-box coverage (fault-free) case keeps its folder (the requests in
# records.jsonl, the agent's stdout/stderr per run, its session files), its
# failure names only files that folder holds, in black-box words, and a
# failed fault-free run shows the end of the agent's output, not its last
# line alone (`}` of a JSON error, as Qwen Code printed).
from __future__ import annotations

from pathlib import Path

import pytest

from faultlab import lab
from faultlab.lab.process.tree import leftovers
from faultlab.lab.report.console import group_failures
from faultlab.lab.report.render import look_at

PAYMENT = str(Path(__file__).resolve().parents[2] / "scenarios" / "payment.toml")
pytestmark = pytest.mark.realprocess

# An agent that fails the way a misconfigured one does: a JSON error over
# several lines on stderr, status 1, before any model request.
FAILING = """import sys
sys.stderr.write('{\\n  "error": "charge_card not found in registry"\\n}\\n')
sys.exit(1)
"""
BROKEN = """name = "broken"
version = "1"
api = "chat"
first = ["{python}", "FAILING"]
resume = ["{python}", "-c", "pass"]
[install]
kind = "builtin"
binary = "{python}"
[session]
glob = "{home}/*.jsonl"
"""


def test_a_failed_fault_free_run_keeps_its_folder_and_shows_the_error(tmp_path: Path) -> None:
    adapter = tmp_path / "broken.toml"
    (tmp_path / "fail.py").write_text(FAILING)
    adapter.write_text(BROKEN.replace("FAILING", str(tmp_path / "fail.py")))
    result = lab.run_agent_case(PAYMENT, "coverage", agent=str(adapter), workdir=tmp_path / "w")
    assert result.codes == ("REFERENCE_FAILED",)
    message = result.violations[0].message
    assert "charge_card not found in registry" in message and message.endswith("| }")
    folder = Path(result.artifacts["dir"])
    assert (folder / "run1-first.stderr").is_file() and (folder / "records.jsonl").is_file()
    shown = look_at(result)
    assert shown[0] == "run1-first.stderr" and all((folder / n).is_file() for n in shown)
    assert leftovers(str(tmp_path)) == []


def test_the_coverage_case_of_a_good_agent_keeps_the_runs_files(tmp_path: Path) -> None:
    result = lab.run_agent_case(PAYMENT, "coverage", agent="reference", workdir=tmp_path)
    assert result.verdict == "pass", [v.message for v in result.violations]
    folder = Path(result.artifacts["dir"])
    names = {p.name for p in folder.iterdir()}
    assert {"records.jsonl", "world.jsonl", "run1-first.stdout", "run1-first.stderr"} <= names
    assert any(n.startswith("final-0-") and n.endswith(".jsonl") for n in names), names
    # Were it a failure, its output would name the files the folder holds,
    # in the black-box meaning of the guarantee.
    failed = lab.CaseResult(result.case, "fail", (lab.Violation("SIDE_EFFECT_DUPLICATED", "x"),),
                            artifacts=result.artifacts)  # fmt: skip
    group = group_failures([failed], replay=lambda r: "replay")[0]
    assert group.look_at == ("world.jsonl", "records.jsonl")
    assert "world ledger" in group.promise and "(black box)" in group.promise
    assert leftovers(str(tmp_path)) == []
