# The outcomes of a black-box case repeated (`run --agent --repeats N`):
# counted by the set of codes each run gave, with the Wilson 95 % interval
# of each share (checked against values computed by hand), and `run
# --repeats` refused where it does not apply; the stability table of
# docs/agents.md made from such rows and rewritten between its markers.
from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from faultlab.cli import main
from faultlab.lab.blackbox.stability import (
    STABILITY_END,
    STABILITY_START,
    StabilityRow,
    repeated_outcomes,
    stability_markdown,
    wilson_interval,
)
from faultlab.lab.errors import LabUsageError
from faultlab.lab.report.findings import write_findings


def test_wilson_interval_matches_hand_computed_values() -> None:
    low, high = wilson_interval(3, 3)
    assert (round(low, 4), high) == (0.4385, 1.0)  # 3/3 is not proof of "always"
    low, high = wilson_interval(5, 10)
    assert (round(low, 4), round(high, 4)) == (0.2366, 0.7634)
    assert wilson_interval(0, 4)[0] == 0.0
    with pytest.raises(ValueError, match="not a share"):
        wilson_interval(5, 4)


def test_outcomes_count_each_set_of_codes_most_frequent_first() -> None:
    runs = [["TOOL_INTENT_LOST", "SIDE_EFFECT_DUPLICATED"], [],
            ["SIDE_EFFECT_DUPLICATED", "TOOL_INTENT_LOST"], ["TOOL_INTENT_LOST"], []]
    counted = repeated_outcomes(runs)
    assert [(o.label, o.count) for o in counted] == [
        ("pass", 2), ("SIDE_EFFECT_DUPLICATED + TOOL_INTENT_LOST", 2), ("TOOL_INTENT_LOST", 1)]
    assert all(o.runs == 5 for o in counted)
    assert counted[2].describe() == "TOOL_INTENT_LOST 1/5 (95% interval 4%-62%)"


def test_run_repeats_is_refused_for_a_drive_it_does_not_apply_to() -> None:
    result = CliRunner().invoke(main, ["run", "scenarios/payment.toml", "--at", "tool/effect#1",
                                       "--repeats", "3"])  # fmt: skip
    assert result.exit_code == 2
    assert "--repeats does not apply to the classic drive" in result.output


def test_the_stability_table_gives_each_outcome_its_interval(tmp_path: Path) -> None:
    row = StabilityRow("codex", "0.171.0", "payment", "tool/applied#1@0ms", "sigkill",
                       (("REPAIR_MISCLASSIFIED",), (), ("REPAIR_MISCLASSIFIED",)))  # fmt: skip
    table = stability_markdown([row])
    assert ("| codex | 0.171.0 | payment | `tool/applied#1@0ms` | sigkill | 3 | "
            "`REPAIR_MISCLASSIFIED` 2/3 (21%-94%); pass 1/3 (6%-79%) |") in table  # fmt: skip
    doc = tmp_path / "agents.md"
    doc.write_text(f"intro\n{STABILITY_START}\nold\n{STABILITY_END}\nrest\n")
    write_findings(doc, table, markers=(STABILITY_START, STABILITY_END))
    text = doc.read_text()
    assert "old" not in text and "2/3 (21%-94%)" in text
    assert text.endswith(f"{STABILITY_END}\nrest\n")
    with pytest.raises(LabUsageError, match="no markers"):
        write_findings(tmp_path / "agents.md", table, markers=("<!-- a -->", "<!-- b -->"))
