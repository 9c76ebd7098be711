# The README's main job, as CI runs it: every case of every fault of every
# bundled scenario.  Under the semantic policy every guarantee holds and every
# declared boundary is reached; under turn-only the oracle fails with the
# codes the design predicts (so it is known to be able to fail).
from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from faultlab import lab
from faultlab.lab.report.write import RunInfo, write_report
from faultlab.probe import FAULTS

pytestmark = pytest.mark.realprocess


# The one test that explores annotations.toml in full (217 of the 2024
# cases, 13% of the time, since issue 30 bundled it); others name a case.
@pytest.mark.heavy(148)
def test_every_bundled_case_passes_every_fault_under_the_semantic_policy(
    tmp_path: Path,
) -> None:
    result = lab.explore_paths(
        [lab.bundled_scenarios()], jobs=2, workdir=tmp_path / "work", faults=FAULTS
    )
    failing = [(r.case.id, r.codes) for r in result.results if not r.passed]
    assert failing == []
    coverage = [r for r in result.results if r.case.occurrence == "coverage"]
    assert len(coverage) >= 10 and all(r.passed for r in coverage)
    assert len(result.results) > 1000
    assert {r.case.fault for r in result.results} >= set(FAULTS)
    run = write_report(result, RunInfo("bundled", ("faultlab", "explore"), None, None, 60.0),
                       tmp_path / "reports")  # fmt: skip
    suite = ET.parse(run / "junit.xml").getroot().find("testsuite")
    assert suite is not None
    assert len(suite.findall("testcase")) == int(suite.get("tests", "0")) == len(result.results)


def test_turn_only_fails_on_the_bundled_scenarios_as_predicted(tmp_path: Path) -> None:
    scenarios = [lab.bundled_scenarios() / name for name in ("payment.toml", "chat.toml")]
    result = lab.explore_paths(scenarios, policy="turn-only", jobs=2, workdir=tmp_path)
    codes = {code for r in result.results for code in r.codes}
    assert not result.passed
    assert {"REQUEST_ENVELOPE_LOST", "TOOL_INTENT_LOST", "SIDE_EFFECT_DUPLICATED"} <= codes
    # Killed before its first request, or after the turn ended, turn-only loses nothing.
    assert all(r.passed for r in result.results if r.case.occurrence.startswith("turn/started"))
    # Only the failures keep their case directories (and so their artifacts).
    kept = {p.name for p in (tmp_path / "cases").iterdir()}
    failed = {
        Path(r.artifacts["dir"]).name
        for r in result.results
        if not r.passed and "dir" in r.artifacts
    }
    assert failed and kept == failed
