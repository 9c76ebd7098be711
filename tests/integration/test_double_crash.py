# Crashes during recovery (`double-sigkill`): a runtime that checkpoints a
# fresh run correctly and a resumed run not at all passes every single-crash
# case and is caught by the double-crash cases; the reference runtime passes
# them; planning is bounded, sampled with a fixed seed and stable.
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from faultlab import lab
from faultlab.lab.faults.double import (
    DOUBLE_FAULT,
    NO_RESUME_POINT,
    parse_pair,
    plan_double_cases,
)
from faultlab.lab.process.reference import LabOptions, run_reference
from faultlab.lab.process.target import script_target
from faultlab.scenario import load_scenario

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "scenarios"
BROKEN = [sys.executable, str(ROOT / "tests" / "variants" / "resume_skips_checkpoints.py")]
# The same variant forked from the fork server (the explorations below; the
# single case above keeps the exec'd --target path): docs/fork-server.md
# "Scripts", tests/integration/test_script_fork.py.
FORKED = script_target(BROKEN[1])
pytestmark = pytest.mark.realprocess


def test_parse_pair_normalises_both_kill_points() -> None:
    assert parse_pair("tool/effect+request/durable#2") == ("tool/effect#1", "request/durable#2")
    assert parse_pair("tool/effect#3+none") == ("tool/effect#3", NO_RESUME_POINT)
    for bad in ("tool/effect#1", "nope#1+tool/effect#1", "tool/effect#1+nope"):
        with pytest.raises(lab.LabUsageError):
            parse_pair(bad)


def test_the_variant_is_caught_by_a_double_crash(tmp_path: Path) -> None:
    result = lab.run_single(
        str(SCENARIOS / "payment.toml"), "request/durable#1+tool/effect#1", fault=DOUBLE_FAULT,
        target=BROKEN, workdir=tmp_path, timeout=60,
    )  # fmt: skip
    assert result.verdict == "fail"
    assert {"TOOL_INTENT_LOST", "REQUEST_ENVELOPE_LOST", "SIDE_EFFECT_DUPLICATED"} <= set(
        result.codes
    ), [v.message for v in result.violations]
    # The evidence names the crash it comes from: the resumed run's.
    lost = next(v for v in result.violations if v.code == "TOOL_INTENT_LOST")
    assert lost.evidence["crash"] == "second crash"


def test_the_variant_passes_every_single_sigkill_case(tmp_path: Path) -> None:
    result = lab.explore_paths(
        [SCENARIOS / "payment.toml"], target=FORKED, workdir=tmp_path, jobs=2,
        faults=("sigkill",),
    )  # fmt: skip
    sigkill = [r for r in result.results if r.case.fault == "sigkill"]
    assert len(sigkill) == len(result.references[0].occurrences) > 10
    assert result.passed, [(r.case.id, r.codes) for r in result.results if r.failed]


def test_the_variant_fails_its_double_crash_exploration(tmp_path: Path) -> None:
    result = lab.explore_paths(
        [SCENARIOS / "payment.toml"], target=FORKED, workdir=tmp_path, jobs=2,
        faults=(DOUBLE_FAULT,), max_double=12,
    )  # fmt: skip
    double = [r for r in result.results if r.case.fault == DOUBLE_FAULT]
    assert 0 < len(double) <= 12
    codes = {code for r in double for code in r.codes}
    assert "REQUEST_ENVELOPE_LOST" in codes and not result.passed


@pytest.mark.parametrize("scenario", ["payment.toml", "nested.toml", "mixed-parallel.toml"])
def test_the_reference_runtime_passes_its_double_crashes(tmp_path: Path, scenario: str) -> None:
    result = lab.explore_paths(
        [SCENARIOS / scenario], workdir=tmp_path, jobs=2, faults=(DOUBLE_FAULT,), max_double=16,
    )  # fmt: skip
    double = [r for r in result.results if r.case.fault == DOUBLE_FAULT]
    assert len(double) == 16
    assert result.passed, [(r.case.id, [v.message for v in r.violations]) for r in double
                           if r.failed]  # fmt: skip


def test_planning_is_bounded_sampled_and_stable(tmp_path: Path) -> None:
    path = str(SCENARIOS / "payment.toml")
    options = LabOptions(lab.make_target(), tmp_path)
    reference = run_reference(path, load_scenario(path), options)
    everything = plan_double_cases(reference, options, max_cases=0, jobs=2)
    bounded = plan_double_cases(reference, options, max_cases=7, jobs=2)
    again = plan_double_cases(reference, options, max_cases=7, jobs=1)
    assert len(bounded) == 7 and bounded == again
    assert set(bounded) < set(everything)
    # Exhaustive: every occurrence is a first kill point; each first kill point's
    # pairs are the resume's occurrences in order.
    firsts = list(dict.fromkeys(c.occurrence.partition("+")[0] for c in everything))
    assert set(firsts) <= set(reference.occurrences)
    assert all("+" in c.occurrence and c.fault == DOUBLE_FAULT for c in everything)
    assert all(c.id.endswith("[double-sigkill]") for c in everything)


def test_a_negative_bound_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(lab.LabUsageError, match="max double cases"):
        lab.explore_paths([SCENARIOS / "chat.toml"], workdir=tmp_path,
                          faults=(DOUBLE_FAULT,), max_double=-1)  # fmt: skip


def test_planning_reports_its_progress(tmp_path: Path) -> None:
    path = str(SCENARIOS / "chat.toml")
    options = LabOptions(lab.make_target(), tmp_path)
    reference = run_reference(path, load_scenario(path), options)
    told: list[tuple[str, int, int]] = []
    plan_double_cases(reference, options, max_cases=5, jobs=2,
                      progress=lambda *step: told.append(step))  # fmt: skip
    assert told == [("chat.toml", n, 5) for n in range(1, 6)]


def test_explore_prints_a_planning_line(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from faultlab.cli import main

    result = CliRunner().invoke(main, [
        "explore", str(SCENARIOS / "chat.toml"), "--faults", DOUBLE_FAULT,
        "--max-double-cases", "3", "--no-report",
    ])  # fmt: skip
    assert result.exit_code == 0, result.stderr
    # Not a terminal: every tenth count and the last (with 3 K1s: each one).
    lines = [line for line in result.stderr.splitlines()
             if line.startswith("planning double-sigkill: ")]  # fmt: skip
    assert lines == [f"planning double-sigkill: chat.toml: {n}/3 first kill point(s) probed"
                     for n in (1, 2, 3)]  # fmt: skip
