# Black-box cases end to end with faultlab's own reference HTTP agent
# (`--agent reference`): a real agent process talking to the real scripted
# model server and MCP tool server, SIGKILLed at what those servers saw. The
# reference agent recovers correctly at every kind of kill point; each
# broken variant (tests/variants/bb_*.py) is caught with its code.
from __future__ import annotations

from pathlib import Path

import pytest

from faultlab import lab
from faultlab.lab.process.tree import leftovers

ROOT = Path(__file__).resolve().parents[2]
PAYMENT = str(ROOT / "scenarios" / "payment.toml")
REFERENCE_ADAPTER = ROOT / "faultlab" / "lab" / "agents" / "bundled" / "reference.toml"
pytestmark = pytest.mark.realprocess


def variant_adapter(tmp_path: Path, variant: str) -> str:
    """An adapter file for a broken variant: the reference one, running the
    variant's script instead of the module (a user's own adapter file)."""
    script = ROOT / "tests" / "variants" / f"{variant}.py"
    text = REFERENCE_ADAPTER.read_text().replace('"-m", "faultlab.runtime.httpagent"',
                                                 f'"{script}"')  # fmt: skip
    text = text.replace('name = "reference"', f'name = "{variant.replace("_", "-")}"')
    path = tmp_path / f"{variant}.toml"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("at", ["tool/applied#1@0", "model/request#1@0", "tool/received#1@0",
                                "model/chunk#2@0", "tool/replied#1@200ms"])  # fmt: skip
def test_the_reference_agent_recovers(tmp_path: Path, at: str) -> None:
    result = lab.run_agent_case(PAYMENT, at, agent="reference", workdir=tmp_path, timeout=120)
    assert result.verdict == "pass", [v.message for v in result.violations]
    records = Path(result.artifacts["records"]).read_bytes()
    assert b'"killPoint":true' in records and b'"kind":"resume"' in records


CAUGHT = [
    ("bb_call_after_result", "tool/applied#1@0", {"TOOL_INTENT_LOST", "SIDE_EFFECT_DUPLICATED"}),
    ("bb_says_aborted", "tool/applied#1@0", {"REPAIR_MISCLASSIFIED"}),
    ("bb_leaves_dangling", "tool/applied#1@0", {"PROVIDER_INVALID_HISTORY"}),
    ("bb_reruns_call", "tool/applied#1@0", {"SIDE_EFFECT_DUPLICATED"}),
    ("bb_async_persist", "model/request#1@0", {"SESSION_NOT_FOUND"}),
]


@pytest.mark.parametrize(("variant", "at", "codes"), CAUGHT, ids=[c[0] for c in CAUGHT])
def test_each_broken_agent_is_caught(tmp_path: Path, variant: str, at: str,
                                     codes: set[str]) -> None:  # fmt: skip
    agent = variant_adapter(tmp_path, variant)
    result = lab.run_agent_case(PAYMENT, at, agent=agent, workdir=tmp_path / "w", timeout=120)
    assert result.verdict == "fail"
    assert codes <= set(result.codes), [v.message for v in result.violations]


def test_no_process_of_a_case_outlives_it(tmp_path: Path) -> None:
    lab.run_agent_case(PAYMENT, "tool/received#1@0", agent="reference", workdir=tmp_path)
    assert leftovers(str(tmp_path)) == []


def test_agent_usage_errors_are_one_line(tmp_path: Path) -> None:
    with pytest.raises(lab.LabUsageError, match="unknown black-box boundary"):
        lab.run_agent_case(PAYMENT, "tool/effect#1", agent="reference", workdir=tmp_path)
    with pytest.raises(lab.LabUsageError):
        lab.run_agent_case(PAYMENT, "tool/applied#1", agent=str(tmp_path / "none.toml"),
                           workdir=tmp_path)  # fmt: skip
