# The findings table of docs/agents.md from black-box reports: kill points
# with repeats folded together, codes counted, the table rewritten between
# its markers, and a folder that is no black-box run refused.
from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from faultlab.lab.errors import LabUsageError
from faultlab.lab.report.findings import (
    FINDINGS_END,
    FINDINGS_START,
    findings_markdown,
    read_findings,
    write_findings,
)


def report(tmp_path: Path, agent: str, cases: list[tuple[str, str, list[str]]],
           drive: str = "agent") -> Path:  # fmt: skip
    run = tmp_path / agent / "latest"
    run.mkdir(parents=True)
    (run / "run.json").write_bytes(orjson.dumps({"drive": drive, "target": [agent]}))
    lines = [orjson.dumps({"occurrence": "coverage", "fault": "reference", "verdict": "pass",
                           "codes": []})]  # fmt: skip
    lines += [orjson.dumps({"occurrence": at, "fault": "sigkill", "verdict": verdict,
                            "codes": codes}) for at, verdict, codes in cases]  # fmt: skip
    (run / "cases.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    return tmp_path / agent


def test_repeats_fold_into_one_row_with_counted_codes(tmp_path: Path) -> None:
    folder = report(tmp_path, "codex", [
        ("tool/applied#1@0ms~1", "fail", ["REPAIR_MISCLASSIFIED"]),
        ("tool/applied#1@0ms~2", "pass", []),
        ("model/request#1@0ms", "pass", []),
    ])  # fmt: skip
    found = read_findings([folder])
    assert [(f.kill_point, f.cases, f.passed) for f in found] == [
        ("model/request#1@0ms", 1, 1), ("tool/applied#1@0ms", 2, 1)]  # fmt: skip
    table = findings_markdown(found)
    assert "| codex | 0.171.0 | `tool/applied#1@0ms` | sigkill | 2 | 1 | " \
           "`REPAIR_MISCLASSIFIED` (1) |" in table  # fmt: skip
    assert "- **codex**: `REPAIR_MISCLASSIFIED` x1" in table


def test_the_table_is_rewritten_between_its_markers(tmp_path: Path) -> None:
    doc = tmp_path / "agents.md"
    doc.write_text(f"before\n{FINDINGS_START}\nold table\n{FINDINGS_END}\nafter\n")
    write_findings(doc, "| new |\n")
    text = doc.read_text()
    assert "old table" not in text and "| new |" in text
    assert text.startswith("before\n") and text.endswith(f"{FINDINGS_END}\nafter\n")
    (tmp_path / "plain.md").write_text("no markers\n")
    with pytest.raises(LabUsageError, match="no findings markers"):
        write_findings(tmp_path / "plain.md", "| new |\n")


def test_a_classic_run_or_no_report_is_refused(tmp_path: Path) -> None:
    classic = report(tmp_path, "x", [], drive="classic")
    with pytest.raises(LabUsageError, match="not a black-box run"):
        read_findings([classic])
    (tmp_path / "empty").mkdir()
    with pytest.raises(LabUsageError, match="not a faultlab report"):
        read_findings([tmp_path / "empty"])
