# The lab as an ACP client (`--drive acp`): the reference ACP agent passes
# SIGKILL, SIGTERM and session/cancel cases, and each client-visible
# guarantee is shown failing on a broken ACP variant (tests/variants/acp_*).
# The full bundled exploration over ACP is slow (two interpreter starts with
# the SDK per case, see docs/acp.md); the suite runs a shard of one scenario.
from __future__ import annotations

import functools
import sys
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from faultlab.cli import main
from faultlab.lab.acp.drive import AcpOptions, run_acp_reference
from faultlab.lab.acp.faults import acp_fault
from faultlab.lab.oracle.case import Case, CaseResult
from faultlab.lab.process.reference import Reference
from faultlab.scenario import load_scenario

ROOT = Path(__file__).resolve().parents[2]
VARIANTS = ROOT / "tests" / "variants"
REFERENCE = (sys.executable, "-m", "faultlab.runtime.acp")
pytestmark = pytest.mark.realprocess


def _scenario(name: str) -> str:
    for folder in (ROOT / "scenarios", ROOT / "tests" / "scenarios"):
        if (folder / name).exists():
            return str(folder / name)
    raise FileNotFoundError(name)


@functools.cache
def _reference(command: tuple[str, ...], scenario: str, work: Path) -> Reference:
    options = AcpOptions(command, work, 30.0, reference=command == REFERENCE)
    reference = run_acp_reference(scenario, load_scenario(scenario), options)
    assert reference.returncode == 0, reference.stderr
    return reference


def _case(command: tuple[str, ...], scenario: str, at: str, fault: str, work: Path) -> CaseResult:
    path = _scenario(scenario)
    options = AcpOptions(command, work, 30.0, reference=command == REFERENCE)
    return acp_fault(fault).run(Case(path, at, fault), _reference(command, path, work), options)


PASSING = [
    # crash after the deploy took effect: repair, replay, guidance delivered
    ("deploy-careful.toml", "tool/effect#1", "sigkill"),
    ("payment.toml", "tool/durable#1", "sigterm"),
    ("acp-two-inflight.toml", "tool/durable#2", "acp-cancel"),
]


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # One work dir per module (and xdist worker): reference runs are shared.
    return tmp_path_factory.mktemp("acp-drive")


@pytest.mark.parametrize(("scenario", "at", "fault"), PASSING)
def test_reference_acp_agent_passes(scenario: str, at: str, fault: str, work: Path) -> None:
    result = _case(REFERENCE, scenario, at, fault, work)
    assert result.verdict == "pass", [v.message for v in result.violations]
    artifacts = result.artifacts
    repaired = Path(artifacts["repaired"]).read_bytes()
    assert repaired.startswith(Path(artifacts["crashed"]).read_bytes())


CAUGHT = [
    ("acp_load_omits_synthetic", "deploy-careful.toml", "tool/effect#1", "sigkill",
     "ACP_REPLAY_MISMATCH"),
    ("acp_guidance_not_sent", "deploy-careful.toml", "tool/effect#1", "sigkill",
     "GUIDANCE_NOT_DELIVERED"),
    ("acp_cancel_drops_closing", "payment.toml", "tool/durable#1", "acp-cancel",
     "CANCEL_NOT_PERSISTED"),
]  # fmt: skip


@pytest.mark.parametrize(("variant", "scenario", "at", "fault", "code"), CAUGHT,
                         ids=[c[4] for c in CAUGHT])  # fmt: skip
def test_acp_guarantee_fails_on_broken_variant(
    variant: str, scenario: str, at: str, fault: str, code: str, work: Path
) -> None:
    command = (sys.executable, str(VARIANTS / f"{variant}.py"))
    result = _case(command, scenario, at, fault, work)
    assert result.verdict == "fail"
    assert code in result.codes, [v.message for v in result.violations]


def test_cli_acp_exploration_replay_and_usage_errors(tmp_path: Path) -> None:
    runner = CliRunner()
    scenario = _scenario("tiny-tool.toml")
    reports = tmp_path / "reports"
    explored = runner.invoke(main, [
        "explore", scenario, "--drive", "acp", "--faults", "sigkill,sigterm",
        "--shard", "1/4", "--jobs", "2", "--report-dir", str(reports), "--json",
    ])  # fmt: skip
    assert explored.exit_code == 0, explored.stderr
    report = orjson.loads(explored.stdout)
    faults = {case["fault"] for case in report["cases"]}
    assert report["passed"] and {"reference", "sigkill", "sigterm"} <= faults
    # The report remembers the drive: replay re-runs the case over ACP.
    case_id = next(c["id"] for c in report["cases"] if c["fault"] == "sigterm")
    replayed = runner.invoke(main, ["replay", case_id, "--report-dir", str(reports)])
    assert replayed.exit_code == 0, replayed.stderr
    assert "same verdict" in replayed.stderr
    refused = runner.invoke(main, ["run", scenario, "--at", "tool/effect#1", "--drive", "acp",
                                   "--fault", "power-loss"])  # fmt: skip
    assert refused.exit_code == 2
    assert refused.stderr.strip().splitlines() == [
        "faultlab: error: unknown fault 'power-loss' for the acp drive "
        "(its faults: sigkill, sigterm, acp-cancel, double-sigkill)"
    ]


def test_oracle_fails_the_acp_agent_under_turn_only(work: Path) -> None:
    # The ACP drive can fail the reference agent too: without semantic
    # checkpoints a SIGKILL after the charge loses the call (as classically).
    command = REFERENCE
    path = _scenario("payment.toml")
    options = AcpOptions(command, work / "turn-only", 30.0, policy="turn-only")
    reference = run_acp_reference(path, load_scenario(path), options)
    result = acp_fault("sigkill").run(Case(path, "tool/effect#1", "sigkill"), reference, options)
    assert result.verdict == "fail"
    assert "TOOL_INTENT_LOST" in result.codes


@pytest.mark.parametrize(
    ("target", "code"),
    [(f"{sys.executable} -c pass", "REFERENCE_FAILED"),
     (f"{sys.executable} {VARIANTS / 'hangs.py'}", "CHILD_HUNG")],
    ids=["exits-at-once", "never-answers"],
)  # fmt: skip
def test_a_target_that_is_no_acp_agent_gets_a_lab_verdict(target: str, code: str) -> None:
    done = CliRunner().invoke(main, [
        "run", _scenario("tiny-tool.toml"), "--at", "tool/effect#1", "--drive", "acp",
        "--target", target, "--timeout", "3", "--json",
    ])  # fmt: skip
    assert done.exit_code == 1, done.stderr
    assert orjson.loads(done.stdout)["codes"] == [code]
    assert "Traceback" not in done.stderr
