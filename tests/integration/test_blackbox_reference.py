# Black-box cases end to end with faultlab's own reference HTTP agent
# (`--agent reference`): a real agent process talking to the real scripted
# model server and MCP tool server, SIGKILLed at what those servers saw. The
# reference agent recovers correctly at every kind of kill point.  Each
# broken variant (tests/variants/bb_*.py) is caught with its code by the
# selftest's quick stage (tests/integration/test_selftest.py, zoo.toml).
from __future__ import annotations

from pathlib import Path

import pytest

from faultlab import lab
from faultlab.lab.process.tree import leftovers

ROOT = Path(__file__).resolve().parents[2]
PAYMENT = str(ROOT / "scenarios" / "payment.toml")
pytestmark = pytest.mark.realprocess


@pytest.mark.parametrize("at", ["tool/applied#1@0", "model/request#1@0", "tool/replied#1@200ms"])
def test_the_reference_agent_recovers(tmp_path: Path, at: str) -> None:
    result = lab.run_agent_case(PAYMENT, at, agent="reference", workdir=tmp_path, timeout=120)
    assert result.verdict == "pass", [v.message for v in result.violations]
    records = Path(result.artifacts["records"]).read_bytes()
    assert b'"killPoint":true' in records and b'"kind":"resume"' in records


def test_no_process_of_a_case_outlives_it(tmp_path: Path) -> None:
    lab.run_agent_case(PAYMENT, "tool/received#1@0", agent="reference", workdir=tmp_path)
    assert leftovers(str(tmp_path)) == []


def test_agent_usage_errors_are_one_line(tmp_path: Path) -> None:
    with pytest.raises(lab.LabUsageError, match="unknown black-box boundary"):
        lab.run_agent_case(PAYMENT, "tool/effect#1", agent="reference", workdir=tmp_path)
    with pytest.raises(lab.LabUsageError):
        lab.run_agent_case(PAYMENT, "tool/applied#1", agent=str(tmp_path / "none.toml"),
                           workdir=tmp_path)  # fmt: skip


def test_the_cli_runs_a_black_box_case_and_refuses_mixed_targets(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from faultlab.cli import main
    from faultlab.lab.campaigns.selftest import variant_adapter
    from faultlab.lab.campaigns.zoo import default_zoo_path, load_zoo

    variant = next(v for v in load_zoo(default_zoo_path()).variants if v.name == "bb_reruns_call")
    agent = variant_adapter(variant, tmp_path)
    ran = CliRunner().invoke(main, ["run", PAYMENT, "--agent", agent, "--at", "tool/applied#1"])
    assert ran.exit_code == 1, ran.stderr
    assert "tool/applied#1 charge_card  <- killed here" in ran.stderr
    assert "SIDE_EFFECT_DUPLICATED [G6]" in ran.stderr
    mixed = CliRunner().invoke(main, ["explore", PAYMENT, "--agent", "reference",
                                      "--policy", "turn-only"])  # fmt: skip
    assert mixed.exit_code == 2 and "--policy does not apply to the agent drive" in mixed.stderr
