# Failure output for cases judged on faultlab's servers (black-box agents):
# the files named are those the case's folder holds, never the white-box
# names (world-ledger.jsonl, final.jsonl, repaired.jsonl), and the report's
# ground-truth line names the servers, not strace.
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

from faultlab.lab.oracle.case import Case, CaseResult
from faultlab.lab.oracle.codes import Violation
from faultlab.lab.report.render import ground_truth_line, look_at


def result(folder: Path, *codes: str, records: bool = True) -> CaseResult:
    artifacts = {"dir": str(folder)} | ({"records": str(folder / "records.jsonl")}
                                        if records else {})  # fmt: skip
    return CaseResult(Case("payment.toml", "tool/applied#1@0ms"), "fail",
                      tuple(Violation(c, "x") for c in codes), artifacts=artifacts)  # fmt: skip


def test_a_black_box_failure_names_only_files_its_folder_holds(tmp_path: Path) -> None:
    for name in ("records.jsonl", "world.jsonl", "at-kill-0-s.jsonl",
                 "at-kill-0-s.jsonl.history.json", "run2-resume.stderr"):  # fmt: skip
        (tmp_path / name).write_text("x")
    assert look_at(result(tmp_path, "SIDE_EFFECT_DUPLICATED")) == ["world.jsonl", "records.jsonl"]
    shown = look_at(result(tmp_path, "TOOL_INTENT_LOST", "SESSION_NOT_FOUND"))
    assert shown == ["records.jsonl", "at-kill-0-s.jsonl.history.json", "world.jsonl",
                     "run2-resume.stderr"]  # fmt: skip
    assert all((tmp_path / name).is_file() for name in shown)
    # The white-box case keeps its own names, where its folder holds them.
    white = result(tmp_path, "SIDE_EFFECT_DUPLICATED", records=False)
    assert "world-ledger.jsonl" not in look_at(white)
    (tmp_path / "world-ledger.jsonl").write_text("x")
    assert "world-ledger.jsonl" in look_at(white)


def test_the_ground_truth_line_names_the_servers() -> None:
    def run(*kinds: str) -> Any:
        return cast(Any, SimpleNamespace(references=[
            SimpleNamespace(scenario_path=f"s{i}.toml", ground_truth=k, ground_truth_note="")
            for i, k in enumerate(kinds)]))  # fmt: skip

    line = ground_truth_line(run("servers", "servers"))
    assert line.startswith("ground truth: faultlab's model and tool servers")
    assert "strace" not in line
    mixed = ground_truth_line(run("syscalls", "servers"))
    assert "system calls (strace) for 1 of 2" in mixed and "tool servers" in mixed
    assert "own file facts" not in mixed
