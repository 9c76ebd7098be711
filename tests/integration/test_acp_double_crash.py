# Crashes during recovery over ACP (`double-sigkill` with `--drive acp`): an
# ACP agent that checkpoints a new session and not a loaded one passes every
# single SIGKILL case and is caught by a double crash; the reference ACP agent
# passes its double crashes, including second kills inside session/load.
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from faultlab import lab
from faultlab.lab.faults.double import DOUBLE_FAULT
from faultlab.lab.process.target import script_target

ROOT = Path(__file__).resolve().parents[2]
PAYMENT = ROOT / "scenarios" / "payment.toml"
BROKEN = [sys.executable, str(ROOT / "tests" / "variants" / "acp_load_skips_checkpoints.py")]
# The same variant forked from the ACP fork server (the exploration below;
# the single case keeps the exec'd --target path): docs/fork-server.md "Scripts".
FORKED = script_target(BROKEN[1])
pytestmark = pytest.mark.realprocess


def test_double_sigkill_is_in_all_and_comes_last() -> None:
    assert lab.parse_faults("all", drive="acp")[-1] == DOUBLE_FAULT
    assert lab.parse_faults("all,double-sigkill", drive="acp") == lab.parse_faults("all",
                                                                                   drive="acp")
    with pytest.raises(lab.LabUsageError, match="unknown fault 'power-loss' for the acp drive"):
        lab.parse_faults("power-loss", drive="acp")


def test_the_acp_variant_is_caught_by_a_double_crash(tmp_path: Path) -> None:
    result = lab.run_single(
        str(PAYMENT), "request/durable#1+tool/effect#1", fault=DOUBLE_FAULT, target=BROKEN,
        workdir=tmp_path, timeout=60, drive="acp",
    )  # fmt: skip
    assert result.verdict == "fail"
    assert {"TOOL_INTENT_LOST", "REQUEST_ENVELOPE_LOST", "SIDE_EFFECT_DUPLICATED"} <= set(
        result.codes
    ), [v.message for v in result.violations]
    lost = next(v for v in result.violations if v.code == "TOOL_INTENT_LOST")
    assert lost.evidence["crash"] == "second crash"


@pytest.mark.heavy(10)
def test_the_acp_variant_passes_every_single_sigkill_case(tmp_path: Path) -> None:
    result = lab.explore_paths(
        [PAYMENT], target=FORKED, workdir=tmp_path, jobs=2, faults=("sigkill",), drive="acp"
    )  # fmt: skip
    sigkill = [r for r in result.results if r.case.fault == "sigkill"]
    assert len(sigkill) == len(result.references[0].occurrences) > 10
    assert result.passed, [(r.case.id, r.codes) for r in result.results if r.failed]


# Both with the default bound (payment.toml's every pair took 47 s of the
# suite's budget; `faultlab explore --drive acp --faults double-sigkill
# --max-double-cases 0` still runs them all), whose spread still puts
# second kills inside session/load.
@pytest.mark.parametrize(("scenario", "bound"), [("payment.toml", 24), ("nested.toml", 24)])
def test_the_reference_acp_agent_passes_its_double_crashes(
    tmp_path: Path, scenario: str, bound: int
) -> None:
    result = lab.explore_paths(
        [ROOT / "scenarios" / scenario], workdir=tmp_path, jobs=2, faults=(DOUBLE_FAULT,),
        max_double=bound, drive="acp",
    )  # fmt: skip
    double = [r for r in result.results if r.case.fault == DOUBLE_FAULT]
    assert double and all(r.verdict == "pass" for r in double), [
        (r.case.id, [v.message for v in r.violations]) for r in double if r.verdict != "pass"
    ]
    # Some second kills land inside the repair of session/load.
    seconds = {r.case.occurrence.partition("+")[2] for r in double}
    assert any(s.startswith("repair/") for s in seconds), seconds
