# Never green on nothing (issue 19, item 5) and the G6 false alarm (item 6b),
# with real processes: a target that reports no boundary, a fault that gets no
# case, an [[expect]] no case checks, each a failure with its own code; the
# summaries count the crash cases that ran per fault; G6 judges effects by what
# the recovered run was entitled to apply.
from __future__ import annotations

import sys
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from faultlab import lab
from faultlab.cli import main
from faultlab.scenario import ScenarioError, parse_scenario

ROOT = Path(__file__).resolve().parents[2]
VARIANTS = ROOT / "tests" / "variants"
SCENARIOS = ROOT / "scenarios"
pytestmark = pytest.mark.realprocess

_PAYMENT_EXPECT_NEVER_REACHED = """\
format = 1
name = "charge-once"
[tools.charge]
effect = "ledger"
[[turns]]
user = "charge"
[[turns.steps]]
tool_calls = [{ tool = "charge" }]
[[turns.steps]]
text = "done"
[[expect]]
at = "tool/durable#5"
repair = ["TOOL_OUTCOME_UNKNOWN"]
"""


def variant(name: str) -> list[str]:
    return [sys.executable, str(VARIANTS / f"{name}.py")]


def explore(tmp_path: Path, scenario: Path, faults: tuple[str, ...], target: str | None = None
            ) -> lab.ExploreResult:  # fmt: skip
    return lab.explore_scenarios(
        lab.load_scenarios([scenario]), target=variant(target) if target else None,
        workdir=tmp_path, faults=faults, timeout=60,
    )  # fmt: skip


def coverage(result: lab.ExploreResult) -> lab.CaseResult:
    return next(r for r in result.results if r.case.occurrence == lab.COVERAGE)


def test_a_target_that_reports_no_boundary_fails_the_run(tmp_path: Path) -> None:
    result = explore(tmp_path, SCENARIOS / "chat.toml", ("sigkill",), "no_boundaries")
    assert not result.passed
    assert coverage(result).codes == ("NO_BOUNDARY_REPORTED",)
    assert result.per_fault == {}  # no crash case ran at all
    # The reference runtime's coverage check of the same scenario passes.
    reference = explore(tmp_path / "ref", SCENARIOS / "chat.toml", ("sigkill",))
    assert coverage(reference).verdict == "pass"
    assert reference.passed and reference.per_fault["sigkill"].ran > 0


def test_a_fault_that_applies_but_gets_no_case_fails_the_run(tmp_path: Path) -> None:
    faults = ("cancel-in-checkpoint",)
    result = explore(tmp_path, SCENARIOS / "payment.toml", faults, "no_tool_boundaries")
    assert not result.passed
    assert coverage(result).codes[0] == "FAULT_NOT_PLANNED"  # payment.toml declares tool/ ones too
    assert coverage(result).violations[0].evidence == {"fault": "cancel-in-checkpoint"}
    reference = explore(tmp_path / "ref", SCENARIOS / "payment.toml", faults)
    assert reference.passed, [r.codes for r in reference.results if r.failed]
    assert reference.per_fault["cancel-in-checkpoint"].ran >= 1


def test_a_fault_that_cannot_apply_is_not_a_gap(tmp_path: Path) -> None:
    # chat.toml calls no tool: cancel-in-checkpoint has nowhere to land.
    result = explore(tmp_path, SCENARIOS / "chat.toml", ("sigkill", "cancel-in-checkpoint"))
    assert result.passed
    assert "cancel-in-checkpoint" not in result.per_fault


def test_a_run_with_only_coverage_checks_fails(tmp_path: Path) -> None:
    # chat.toml calls no tool: cancel-in-checkpoint alone plans no crash case.
    args = ["explore", str(SCENARIOS / "chat.toml"), "--faults", "cancel-in-checkpoint",
            "--no-report", "--json"]  # fmt: skip
    outcome = CliRunner().invoke(main, args)
    assert outcome.exit_code == 1, outcome.stderr
    printed = orjson.loads(outcome.stdout)
    assert printed["passed"] is False and printed["perFault"] == {}
    assert [c["verdict"] for c in printed["cases"]] == ["pass"]  # the coverage check only
    assert "no crash case ran" in outcome.stderr


def test_an_expectation_no_case_checks_fails_the_run(tmp_path: Path) -> None:
    scenario = tmp_path / "charge-once.toml"
    scenario.write_text(_PAYMENT_EXPECT_NEVER_REACHED, encoding="utf-8")
    result = explore(tmp_path / "lab", scenario, ("sigkill",))
    assert not result.passed
    assert coverage(result).codes == ("EXPECTATION_NOT_CHECKED",)
    evidence = coverage(result).violations[0].evidence
    assert evidence == {"at": "tool/durable#5", "fault": "sigkill"}
    # Every crash case itself passed: only the unchecked expectation fails the run.
    assert all(r.passed for r in result.results if r.case.occurrence != lab.COVERAGE)
    # A run that does not inject the expectation's fault does not owe it a case.
    other = explore(tmp_path / "other", scenario, ("sigterm",))
    assert coverage(other).verdict == "pass"


@pytest.mark.parametrize(
    ("fault", "at", "field"),
    [("io-error", "tool/durable#1", "fault"), ("power-loss", "tool/durable#1", "at"),
     ("torn-write", "request/logged#1", "at")],
)  # fmt: skip
def test_an_expectation_no_case_could_check_is_a_scenario_error(
    fault: str, at: str, field: str
) -> None:
    text = _PAYMENT_EXPECT_NEVER_REACHED.replace('at = "tool/durable#5"',
                                                 f'at = "{at}"\nfault = "{fault}"')  # fmt: skip
    with pytest.raises(ScenarioError, match=rf"expect\[0\]\.{field}: .*never be checked"):
        parse_scenario(text, path="x.toml")
    if fault != "io-error":  # at flush/written, where their cases run, they load fine
        parse_scenario(text.replace(f'at = "{at}"', 'at = "flush/written#2"'), path="x.toml")


def test_an_unchecked_expectation_is_exit_2_at_load(tmp_path: Path) -> None:
    scenario = tmp_path / "x.toml"
    sigterm = 'at = "tool/durable#1"\nfault = "sigterm"'
    text = _PAYMENT_EXPECT_NEVER_REACHED.replace('at = "tool/durable#5"', sigterm)
    scenario.write_text(text, encoding="utf-8")
    outcome = CliRunner().invoke(main, ["explore", str(scenario), "--no-report"])
    assert outcome.exit_code == 2
    assert "x.toml:13: expect[0].fault:" in outcome.stderr
    assert "Traceback" not in outcome.output + outcome.stderr


def test_summaries_count_crash_cases_per_fault(tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    args = ["explore", str(SCENARIOS / "chat.toml"), "--faults", "sigkill,power-loss",
            "--backend", "sqlite", "--report-dir", str(reports), "--json"]  # fmt: skip
    outcome = CliRunner().invoke(main, args)
    assert outcome.exit_code in (0, 1), outcome.stderr
    printed = orjson.loads(outcome.stdout)
    summary = orjson.loads((reports / "latest" / "summary.json").read_bytes())
    per_fault = summary["perFault"]
    assert printed["perFault"] == per_fault
    for fault in ("sigkill", "power-loss"):
        cases = [c for c in printed["cases"] if c["fault"] == fault]
        unsupported = sum(1 for c in cases if c["verdict"] == "unsupported")
        assert per_fault[fault] == {"ran": len(cases) - unsupported, "unsupported": unsupported}
    assert per_fault["sigkill"]["ran"] > 0
    ran = sum(t["ran"] for t in per_fault.values())
    unsupported = sum(t["unsupported"] for t in per_fault.values())
    assert ran + unsupported + 1 == summary["cases"]  # + the coverage check
    # The console's table adds up: cases = pass + fail + other + unsupported.
    rows = [line.split() for line in outcome.stderr.splitlines()
            if line.startswith(("chat.toml ", "total "))]  # fmt: skip
    assert len(rows) == 2
    for row in rows:
        cases, passed, failed, other, unsup = map(int, row[1:6])
        assert cases == passed + failed + other + unsup
    assert "crash cases per fault: sigkill " in outcome.stderr
    markdown = (reports / "latest" / "report.md").read_text("utf-8")
    assert "## Crash cases per fault" in markdown
    assert f"| sigkill | {per_fault['sigkill']['ran']} | 0 |" in markdown


def test_g6_allows_an_effect_the_recovered_run_was_entitled_to(tmp_path: Path) -> None:
    # The fuzz false alarm of seed 7: ping2 fails in the fault-free run, so the
    # model never calls write0; killed with ping2's call durable but unanswered,
    # repair says TOOL_OUTCOME_UNKNOWN and the model calls write0 once.
    scenario = ROOT / "tests" / "scenarios" / "branch-after-unknown.toml"
    result = lab.run_single(str(scenario), "flush/written#2", workdir=tmp_path, timeout=60)
    assert result.verdict == "pass", [v.message for v in result.violations]


@pytest.mark.parametrize("name", ["resume_reruns_tools", "resume_retries_unknown"])
def test_g6_still_catches_an_effect_applied_twice(tmp_path: Path, name: str) -> None:
    result = lab.run_single(str(SCENARIOS / "payment.toml"), "tool/effect#1",
                            target=variant(name), workdir=tmp_path, timeout=60)  # fmt: skip
    assert result.verdict == "fail"
    assert "SIDE_EFFECT_DUPLICATED" in result.codes
    rule = "callId" if name == "resume_reruns_tools" else "unknownCallId"
    assert any(rule in v.evidence for v in result.violations if v.code == "SIDE_EFFECT_DUPLICATED")


# Issue 19 item 6: no false alarm in any policy.  Each case failed on the
# reference runtime under every-event before; the runtime or the lab was fixed
# (docs/decisions.md says which and why).
EVERY_EVENT_CLEAN = [
    ("payment.toml", "tool/logged#1", "cancel-in-checkpoint"),  # was DISPATCH_AFTER_CANCEL
    ("mixed-parallel.toml", "tool/logged#2", "cancel-in-checkpoint"),
    ("multi-turn.toml", "request/logged#4", "io-error"),  # was PROVIDER_INVALID_HISTORY
    ("payment.toml", "assistant/recorded#1", "sigkill"),  # was EXPECTATION_FAILED
    ("payment.toml", "tool/durable#1", "sigkill"),  # its [[expect]] holds under every-event
]


@pytest.mark.parametrize(("scenario", "at", "fault"), EVERY_EVENT_CLEAN)
def test_every_event_raises_no_false_alarm(
    tmp_path: Path, scenario: str, at: str, fault: str
) -> None:
    result = lab.run_single(str(SCENARIOS / scenario), at, fault=fault, policy="every-event",
                            workdir=tmp_path, timeout=60)  # fmt: skip
    assert result.verdict == "pass", [v.message for v in result.violations]


def test_an_expectation_is_checked_only_under_its_policies(tmp_path: Path) -> None:
    # payment.toml's assistant/recorded#1 expects repair [] (semantic only):
    # broken under the scenario's own policy it must still fail.
    from faultlab.scenario import load_scenario

    payment = load_scenario(SCENARIOS / "payment.toml")
    owned = [e for e in payment.expectations if e.at == "assistant/recorded#1"]
    assert owned and owned[0].policies is None
    flipped = 'at = "assistant/recorded#1"\nrepair = ["TOOL_NOT_STARTED"]'
    text = (SCENARIOS / "payment.toml").read_text("utf-8")
    text = text.replace('at = "assistant/recorded#1"\nrepair = []', flipped)
    broken = tmp_path / "payment.toml"
    broken.write_text(text, encoding="utf-8")
    semantic = lab.run_single(str(broken), "assistant/recorded#1", workdir=tmp_path / "s")
    assert semantic.codes == ("EXPECTATION_FAILED",)
    # Under every-event neither the flipped nor the original one is owed (both
    # hold for the scenario's own policy only): neither run fails.
    for path in (broken, SCENARIOS / "payment.toml"):
        result = lab.run_single(str(path), "assistant/recorded#1", policy="every-event",
                                workdir=tmp_path / "e" / path.parent.name)  # fmt: skip
        assert result.verdict == "pass", result.codes


def test_a_torn_write_case_is_deterministic(tmp_path: Path) -> None:
    payment = str(SCENARIOS / "payment.toml")
    result = lab.run_single(payment, "flush/written#3", fault="torn-write", workdir=tmp_path,
                            check_determinism=True)  # fmt: skip
    assert result.verdict == "pass", [v.message for v in result.violations]


def test_g6_entitles_the_same_effect_made_again_on_purpose(tmp_path: Path) -> None:
    # The first deploy's outcome is unknown after the kill (and it was applied);
    # the careful model verifies instead of retrying; the script's second turn
    # redeploys on purpose, as the fault-free run does: not a duplicate.
    scenario = ROOT / "tests" / "scenarios" / "deploy-twice.toml"
    result = lab.run_single(str(scenario), "tool/effect#1", workdir=tmp_path, timeout=60)
    assert result.verdict == "pass", [v.message for v in result.violations]
